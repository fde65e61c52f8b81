// The browser test (docs/browser.md, "The browser test"): Debian's chromium, headless, driven by
// puppeteer-core, against a `weir serve` with access control and TLS on (an Ed25519 JWT: Bearer for
// fetch, access_token in the query for EventSource; a certificate made here, which the browser trusts by its key:
// --ignore-certificate-errors-spki-list, not --ignore-certificate-errors) and cors-allowed-origins
// naming the origin of the example pages of examples/browser/, served from another origin.
//
//   node browser_test.mjs --weir WEIR_BINARY --out DIR [--chromium /usr/bin/chromium]
//
// Tab A appends from the page's form; tab B tails the stream with a plain EventSource (examples/
// browser/app.js: no helper code, the browser reconnects by itself). Checked: every message shows in
// tab B, in order and exactly once, across weir's own SSE close (--sse-close-after-ms, short here) and
// across a kill -9 and restart of weir on the same port and data directory; the official client
// (examples/browser/client.html) shows the same messages; a credentialed request works from the listed
// origin and is refused by the browser from another; a bad Last-Event-ID is a 400 naming the accepted
// forms. Screenshots go to DIR. Every process started here is stopped by its PID (browser_support.mjs).
import { join } from 'node:path';
import { check, createTestEnv, parseArgs } from './browser_support.mjs';

const { outDir, ...paths } = parseArgs('browser_test.mjs');
const env = createTestEnv('browser', paths);
const dataDir = join(env.work, 'data');
const token = env.makeJwt();
const weirRequest = env.weirRequest;
const startWeir = (port, allowedOrigin) => env.startWeir({
  port, dataDir, allowedOrigin,
  // Short SSE lifetime: the browser's own reconnection is exercised many times per run.
  extraArgs: ['--sse-close-after-ms', '1500', '--sse-keep-alive-ms', '500'],
});

// ---- page helpers ----
const shownTexts = (page) =>
  page.$$eval('#messages li .text', (els) => els.map((e) => e.textContent));

async function appendFromForm(page, text, n) {
  // Input goes to the tab in front (a background tab gets no animation frames, which clicks wait for);
  // the tailing tab keeps receiving its events behind it.
  await page.bringToFront();
  await page.type('#message', text);
  await page.click('#send');
  // The page says "appended n" once weir acknowledged the append (its status 2xx).
  await page.waitForFunction((k) => document.getElementById('append-status').textContent === `appended ${k}`,
                             { timeout: 10_000, polling: 'mutation' }, n);
}

// Waits (bounded) until tab `page` shows `count` messages; returns how long after sending the page
// says the last one arrived (its own measure: text, for the report, not asserted).
async function waitShown(page, count) {
  await page.waitForFunction((k) => document.querySelectorAll('#messages li').length >= k,
                             { timeout: 10_000, polling: 'mutation' }, count);
  return page.$eval('#messages li:last-child .latency', (e) => e.textContent);
}

const connections = (page) =>
  page.$eval('#tail-status', (e) => Number((e.textContent.match(/connections (\d+)/) || [0, 0])[1]));

const expected = (n) => Array.from({ length: n }, (_, i) => `message ${i + 1}`);

async function main() {
  try {
    const site = await env.startSite();
    const siteUrl = site.url;
    // The same pages from another origin (localhost, not 127.0.0.1): not listed.
    const otherSiteUrl = `http://localhost:${site.port}`;
    let weir = await startWeir(0, siteUrl);
    const stream = `/v1/stream/browser-${process.pid}`;

    // A bad Last-Event-ID: 400 naming the accepted forms (before anything exists: validation first).
    {
      const res = await weirRequest(`${weir.url}${stream}?offset=-1&live=sse`,
                                    { headers: { Authorization: `Bearer ${token}`, 'Last-Event-ID': 'bogus' } });
      check(res.status === 400 && res.body.includes('Last-Event-ID') && res.body.includes('-1'),
            `a bad Last-Event-ID is a 400 naming the accepted forms (${res.status} ${res.body.trim()})`);
      const pre = await weirRequest(`${weir.url}${stream}`, {
        method: 'OPTIONS',
        headers: { Origin: siteUrl, 'Access-Control-Request-Method': 'POST' },
      });
      check(pre.status === 204 && pre.headers['access-control-allow-origin'] === siteUrl &&
            pre.headers['access-control-allow-credentials'] === 'true' && pre.headers.vary === 'Origin',
            'a preflight from the listed origin echoes it with credentials and Vary: Origin');
    }

    const browser = await env.launchChromium();

    const query = (extra) =>
      `?weir=${encodeURIComponent(weir.url)}&stream=${encodeURIComponent(stream)}` +
      `&token=${encodeURIComponent(token)}${extra}`;
    const appender = await browser.newPage();
    await appender.goto(`${siteUrl}/index.html${query('')}`);
    await appender.click('#create');
    await appender.waitForFunction(() => /created/.test(document.getElementById('create-status').textContent),
                                   { timeout: 10_000, polling: 'mutation' });
    check(true, 'tab A created the stream (cross-origin fetch over https with a Bearer JWT)');

    // Credentials (cookies, withCredentials) from the listed origin only (cors-allowed-origins).
    const credentialedFetch = (page, credentials) => page.evaluate(async (u, t, c) => {
      try {
        const r = await fetch(`${u}?offset=-1`, { credentials: c, headers: { Authorization: `Bearer ${t}` } });
        return `status ${r.status}`;
      } catch (e) {
        return `refused (${e.name})`;
      }
    }, weir.url + stream, token, credentials);
    const credentialedEventSource = (page) => page.evaluate((u) => new Promise((done) => {
      const es = new EventSource(u, { withCredentials: true });
      es.onopen = () => { es.close(); done('open'); };
      es.onerror = () => { es.close(); done('refused'); };
    }), `${weir.url}${stream}?offset=-1&live=sse&access_token=${encodeURIComponent(token)}`);
    check(await credentialedFetch(appender, 'include') === 'status 200',
          'a credentialed fetch from the listed origin is answered');
    check(await credentialedEventSource(appender) === 'open',
          'an EventSource withCredentials from the listed origin opens');
    const stranger = await browser.newPage();
    await stranger.goto(`${otherSiteUrl}/index.html${query('')}`);
    const refused = await credentialedFetch(stranger, 'include');
    check(refused.startsWith('refused'), `the browser refuses a credentialed fetch from an unlisted origin: ${refused}`);
    check(await credentialedEventSource(stranger) === 'refused',
          'and an EventSource withCredentials from it');
    check(await credentialedFetch(stranger, 'omit') === 'status 200',
          'the unlisted origin still reads without credentials (Access-Control-Allow-Origin: *)');
    await stranger.close();

    const tail = await browser.newPage();
    await tail.goto(`${siteUrl}/index.html${query('&tail=1')}`);
    await tail.waitForFunction(() => /^live/.test(document.getElementById('tail-status').textContent),
                               { timeout: 10_000, polling: 'mutation' });
    check(true, 'tab B tails the stream with EventSource (the JWT in access_token)');

    // 1. Live: each message appended in tab A shows in tab B.
    let n = 0;
    const latencies = [];
    for (; n < 5;) {
      n += 1;
      await appendFromForm(appender, `message ${n}`, n);
      latencies.push(await waitShown(tail, n));
    }
    console.log(`tab B showed messages 1-5: ${latencies.join(', ')}`);
    check(JSON.stringify(await shownTexts(tail)) === JSON.stringify(expected(n)), 'messages 1-5 shown once, in order');

    // 2. weir closes the SSE response (1.5 s lifetime); the browser reconnects with Last-Event-ID.
    // Each reconnection without an id would replay the stream from offset=-1 (duplicates).
    const before = await connections(tail);
    await tail.waitForFunction((k) => Number((document.getElementById('tail-status').textContent
                                                .match(/connections (\d+)/) || [0, 0])[1]) >= k,
                               { timeout: 15_000, polling: 'mutation' }, before + 2);
    check(JSON.stringify(await shownTexts(tail)) === JSON.stringify(expected(n)),
          `after ${(await connections(tail)) - 1} reconnections by the browser: still messages 1-5, none twice`);
    for (; n < 10;) {
      n += 1;
      await appendFromForm(appender, `message ${n}`, n);
      latencies.push(await waitShown(tail, n));
    }
    check(JSON.stringify(await shownTexts(tail)) === JSON.stringify(expected(n)), 'messages 1-10 shown once, in order');

    // 3. kill -9 and restart on the same port and data directory.
    const port = weir.port;
    await env.stopChild(weir.child, 'SIGKILL');
    console.log(`weir killed with SIGKILL`);
    await tail.waitForFunction(() => /reconnecting/.test(document.getElementById('tail-status').textContent),
                               { timeout: 10_000, polling: 'mutation' });
    check(true, 'tab B noticed the loss and is reconnecting');
    const beforeRestart = await connections(tail);
    weir = await startWeir(port, siteUrl);
    await tail.waitForFunction((k) => Number((document.getElementById('tail-status').textContent
                                                .match(/connections (\d+)/) || [0, 0])[1]) > k,
                               { timeout: 15_000, polling: 'mutation' }, beforeRestart);
    check(JSON.stringify(await shownTexts(tail)) === JSON.stringify(expected(n)),
          'after the restart the browser reconnected by itself: messages 1-10, none twice');
    for (; n < 15;) {
      n += 1;
      await appendFromForm(appender, `message ${n}`, n);
      latencies.push(await waitShown(tail, n));
    }
    check(JSON.stringify(await shownTexts(tail)) === JSON.stringify(expected(n)),
          'messages 1-15 shown once, in order, across SSE closes and a kill -9');
    const text = await tail.$eval('body', (b) => b.innerText);
    check(text.includes('message 15') && /connections \d+; shown 15;/.test(text),
          'tab B page text: message 15 and "shown 15"');
    await tail.bringToFront();
    await tail.screenshot({ path: join(outDir, 'browser_tail.png'), fullPage: true });
    await appender.bringToFront();
    await appender.screenshot({ path: join(outDir, 'browser_append.png'), fullPage: true });

    // 4. The official client (its ESM build, loaded by the page as it is) sees the same stream.
    const client = await browser.newPage();
    await client.goto(`${siteUrl}/client.html${query('')}`);
    await client.waitForFunction((k) => document.querySelectorAll('#messages li').length >= k,
                                 { timeout: 10_000, polling: 'mutation' }, n);
    check(JSON.stringify(await shownTexts(client)) === JSON.stringify(expected(n)),
          '@durable-streams/client page shows messages 1-15');
    n += 1;
    await appendFromForm(client, `message ${n}`, 1);
    await client.waitForFunction((k) => document.querySelectorAll('#messages li').length >= k,
                                 { timeout: 10_000, polling: 'mutation' }, n);
    await waitShown(tail, n);
    check(JSON.stringify(await shownTexts(tail)) === JSON.stringify(expected(n)) &&
          JSON.stringify(await shownTexts(client)) === JSON.stringify(expected(n)),
          'a message appended with the client shows in both tabs');
    await client.bringToFront();
    await client.screenshot({ path: join(outDir, 'browser_client.png'), fullPage: true });
    console.log(`latencies (as the page measured them): ${latencies.join(', ')}`);
    console.log(`screenshots in ${outDir}`);
    console.log('browser test: all checks passed');
  } finally {
    await env.cleanup();
  }
}

main().catch((err) => {
  console.error(err.stack || String(err));
  process.exitCode = 1;
});

// The browser test over HTTP/2 (docs/browser.md, "The HTTP/2 browser test"; docs/http2.md): headless
// Chromium (Debian's, driven by puppeteer-core) on a page served from another origin
// (examples/browser/tails.html) opens 50 plain EventSource tails, one per stream, on one weir origin
// with TLS and access control (browser_support.mjs).
//
//   node browser_h2_test.mjs --weir WEIR_BINARY --out DIR [--chromium /usr/bin/chromium]
//
// 1. weir with HTTP/2 (ALPN h2): all 50 tails go live over ONE connection, which speaks h2 (the
//    browser's own account of each EventSource response through the DevTools protocol: its protocol
//    and connection id; weir's /metrics: one connection accepted from the browser, one HTTP/2
//    connection). Events appended to each stream reach its tail; weir is killed with SIGKILL and
//    started again on the same port and data directory mid-way; every tail shows every event of its
//    stream exactly once and in order, and after the restart the 50 are again on one h2 connection.
// 2. The same page against weir with `http2 false`: the browser gives the origin six connections, so 6
//    tails go live and show an event appended to every stream while the other 44 stay CONNECTING with
//    nothing shown (checked when the 6 have shown it); closing the 6 lets the next 6 connect.
//
// One stream per tail (50 streams, not 50 tails of one): each tail's events are its own ("s7 e3"), so
// an event of one stream shown by another's tail, or a tail resumed at another's offset, shows as a
// difference; it is also how a page showing many items tails them. Events are appended from this
// process over HTTP/1.1, so that the HTTP/1.1 case can append while the page has no connection left.
// Screenshots go to DIR. Every process started here is stopped by its PID (browser_support.mjs).
import { join } from 'node:path';
import { check, createTestEnv, parseArgs, readMetrics } from './browser_support.mjs';

const TAILS = 50;
const HTTP1_CONNECTIONS = 6;  // Chromium's per-origin HTTP/1.1 connection limit (per profile)
const WAIT_MS = 20_000;       // a bound on each wait for the page, not a synchronisation

const { outDir, ...paths } = parseArgs('browser_h2_test.mjs');
const env = createTestEnv('browser-h2', paths);
const token = env.makeJwt();                 // read,write:/v1/stream/: the page's tails and our appends
const adminToken = env.makeJwt('admin:/');   // /metrics

const want = (i, n) => Array.from({ length: n }, (_, j) => `s${i} e${j + 1}`);
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

async function createStreams(weir, prefix) {
  const statuses = await Promise.all(Array.from({ length: TAILS }, (_, i) => env.weirRequest(
    `${weir.url}${prefix}${i}`,
    { method: 'PUT', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' } })
    .then((r) => r.status)));
  check(statuses.every((s) => s === 201), `${TAILS} streams ${prefix}0..${TAILS - 1} created`);
}

// Appends event `j` ("s<i> e<j>") to each stream; the streams in parallel, each once.
async function appendRound(weir, prefix, j) {
  const statuses = await Promise.all(Array.from({ length: TAILS }, (_, i) => env.weirRequest(
    `${weir.url}${prefix}${i}`,
    { method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ text: `s${i} e${j}` }) })
    .then((r) => r.status)));
  if (!statuses.every((s) => s >= 200 && s < 300)) throw new Error(`append e${j}: ${statuses.join(' ')}`);
}

// Connections weir accepted from the browser: all it accepted (its counter, since it started) less
// those this process opened (one per request, this one included).
async function browserConnections(weir) {
  const m = await readMetrics(env, weir.url, adminToken);
  return { fromBrowser: m.weir_http_connections_accepted_total - env.connections.get(weir.url),
           h2: m.weir_http2_connections_total, h2Streams: m.weir_http2_streams_total };
}

// The browser's account of each EventSource response (DevTools protocol Network domain): the protocol
// it spoke and the id of the connection that carried it. The events come apart from the page's own;
// `seen.waitFor(n)` waits (bounded) until n responses have been reported.
async function watchEventSources(page) {
  const seen = [];
  const waiters = new Set();
  const cdp = await page.createCDPSession();
  cdp.on('Network.responseReceived', (e) => {
    if (e.type !== 'EventSource') return;
    const r = e.response;
    seen.push({ protocol: r.protocol, connection: r.connectionId, status: r.status });
    for (const w of waiters) if (seen.length >= w.n) w.done();
  });
  await cdp.send('Network.enable');
  seen.waitFor = (n) => new Promise((resolveWait, rejectWait) => {
    const timer = setTimeout(() => {
      waiters.delete(w);
      rejectWait(new Error(`${seen.length} EventSource responses reported, not ${n}`));
    }, WAIT_MS);
    const w = { n, done: () => { clearTimeout(timer); waiters.delete(w); resolveWait(); } };
    waiters.add(w);
    if (seen.length >= n) w.done();
  });
  return seen;
}

// What a list of reported responses says: one protocol, how many connections, all 200.
const describe = (responses) => {
  const protocols = [...new Set(responses.map((r) => r.protocol))].join(',');
  const connections = new Set(responses.map((r) => r.connection)).size;
  const ok = responses.every((r) => r.status === 200);
  return { count: responses.length, protocols, connections, ok,
           text: `${responses.length} responses, ${protocols}, ${connections} connection(s)` };
};

const tails = (page) => page.evaluate(() => window.weirTails.state());

// Waits (bounded) until `pred(state of every tail, arg)` holds in the page, re-checked on each change of
// the page (every EventSource event renders).
function waitTails(page, pred, arg) {
  return page.waitForFunction(`(${pred})(window.weirTails.state(), ${JSON.stringify(arg)})`,
                              { timeout: WAIT_MS, polling: 'mutation' });
}
// Every tail live, connected at least `opens` times, showing at least `shown` events.
const allLiveShown = (s, a) => s.every((t) => t.readyState === 1 && t.opens >= a.opens &&
                                              t.shown.length >= a.shown);

function pageUrl(site, weir, prefix) {
  return `${site.url}/tails.html?weir=${encodeURIComponent(weir.url)}&prefix=${encodeURIComponent(prefix)}` +
         `&count=${TAILS}&token=${encodeURIComponent(token)}&tail=1`;
}

async function overHttp2(browser, site) {
  console.log('--- HTTP/2 ---');
  const dataDir = join(env.work, 'data-h2');
  // weir ends each SSE response after 2 s (a short sse-close-after-ms): the tails also come back by
  // themselves while weir is up, as new h2 streams of the same connection (Last-Event-ID).
  const extraArgs = ['--sse-close-after-ms', '2000'];
  let weir = await env.startWeir({ dataDir, allowedOrigin: site.url, extraArgs });
  const prefix = `/v1/stream/h2-${process.pid}-`;
  await createStreams(weir, prefix);
  // One h2 connection from the browser (its report and weir's count), carrying every tail so far.
  const oneConnection = async (responses, what) => {
    const d = describe(responses);
    const c = await browserConnections(weir);
    check(d.ok && d.protocols === 'h2' && d.connections === 1 && c.fromBrowser === 1 && c.h2 === 1 &&
          c.h2Streams >= d.count,
          `${what}: the browser reports ${d.text}; weir accepted ${c.fromBrowser} connection from the ` +
          `browser, ${c.h2} HTTP/2, with ${c.h2Streams} streams`);
  };

  const page = await browser.newPage();
  const seen = await watchEventSources(page);
  await page.goto(pageUrl(site, weir, prefix));
  await waitTails(page, allLiveShown, { opens: 1, shown: 0 });
  await seen.waitFor(TAILS);
  await oneConnection(seen, `all ${TAILS} tails live`);

  let n = 0;
  for (; n < 3;) await appendRound(weir, prefix, ++n);
  await waitTails(page, allLiveShown, { opens: 1, shown: n });
  check((await tails(page)).every((t, i) => same(t.shown, want(i, n))),
        `every tail shows e1..e${n} of its own stream, once, in order`);
  // weir's SSE close: every tail comes back by itself, then more events.
  await waitTails(page, allLiveShown, { opens: 2, shown: n });
  for (; n < 6;) await appendRound(weir, prefix, ++n);
  await waitTails(page, allLiveShown, { opens: 2, shown: n });
  check((await tails(page)).every((t, i) => same(t.shown, want(i, n))),
        `after weir closed every SSE response and the browser reconnected: e1..e${n}, once, in order`);
  await oneConnection(seen, 'still');

  // kill -9 mid-way; every tail notices (readyState CONNECTING: the browser reconnects by itself).
  const port = weir.port;
  const seenBeforeRestart = seen.length;
  await env.stopChild(weir.child, 'SIGKILL');
  console.log('weir killed with SIGKILL');
  await waitTails(page, (s) => s.every((t) => t.readyState === 0), null);
  check(true, `all ${TAILS} tails lost their connection and are reconnecting`);
  const opensBefore = (await tails(page)).map((t) => t.opens);
  weir = await env.startWeir({ port, dataDir, allowedOrigin: site.url, extraArgs });
  // Appended at once: some tails have reconnected by now and get them live, the others on resuming.
  for (; n < 9;) await appendRound(weir, prefix, ++n);
  await waitTails(page, (s, a) => s.every((t, i) => t.readyState === 1 && t.opens > a.opens[i] &&
                                                     t.shown.length >= a.n),
                  { opens: opensBefore, n });
  for (; n < 12;) await appendRound(weir, prefix, ++n);
  await waitTails(page, allLiveShown, { opens: 3, shown: n });
  const final = await tails(page);
  check(final.every((t, i) => same(t.shown, want(i, n))),
        `after kill -9 and restart: every tail shows e1..e${n} of its own stream, none missing or twice, ` +
        'in order');
  await seen.waitFor(seenBeforeRestart + TAILS);
  await oneConnection(seen.slice(seenBeforeRestart), 'the browser came back to the restarted weir');
  console.log(`connections per tail (opens): ${[...new Set(final.map((t) => t.opens))].sort().join(', ')}`);
  await page.screenshot({ path: join(outDir, 'browser_h2_tails.png'), fullPage: true });
  await page.close();
  await env.stopChild(weir.child, 'SIGTERM');
}

async function overHttp1(browser, site) {
  console.log('--- HTTP/1.1 (http2 false) ---');
  // No SSE response ends during the test (sse-close-after-ms far beyond it): a tail that goes live
  // holds its connection, as a tail of a real page does between weir's closes.
  const weir = await env.startWeir({ dataDir: join(env.work, 'data-h1'), allowedOrigin: site.url,
                                     extraArgs: ['--http2', 'false', '--sse-close-after-ms', '600000'] });
  const prefix = `/v1/stream/h1-${process.pid}-`;
  await createStreams(weir, prefix);

  const page = await browser.newPage();
  const seen = await watchEventSources(page);
  await page.goto(pageUrl(site, weir, prefix));
  const live = (s, a) => s.filter((t) => t.readyState === 1 && t.shown.length >= a.shown).length >= a.count;
  await waitTails(page, live, { count: HTTP1_CONNECTIONS, shown: 0 });
  await appendRound(weir, prefix, 1);
  await waitTails(page, live, { count: HTTP1_CONNECTIONS, shown: 1 });
  await seen.waitFor(HTTP1_CONNECTIONS);
  // At the moment 6 tails showed e1, which was appended to every stream:
  {
    const s = await tails(page);
    const lit = s.map((t, i) => i).filter((i) => s[i].readyState === 1);
    const waiting = s.filter((t) => t.readyState === 0 && t.opens === 0 && t.shown.length === 0).length;
    const d = describe(seen);
    const c = await browserConnections(weir);
    check(lit.length === HTTP1_CONNECTIONS && lit.every((i) => same(s[i].shown, want(i, 1))) &&
          waiting === TAILS - HTTP1_CONNECTIONS,
          `over HTTP/1.1 e1 reached exactly ${HTTP1_CONNECTIONS} tails (${lit.join(', ')}); the other ` +
          `${waiting} are CONNECTING and never opened`);
    check(d.ok && d.protocols === 'http/1.1' && d.count === HTTP1_CONNECTIONS &&
          d.connections === HTTP1_CONNECTIONS,
          `the browser reports ${d.text}`);
    check(c.fromBrowser === HTTP1_CONNECTIONS && c.h2 === 0,
          `weir accepted ${c.fromBrowser} connections from the browser, none HTTP/2`);
    await page.screenshot({ path: join(outDir, 'browser_h1_tails.png'), fullPage: true });

    // Closing the 6 live tails frees their connections: the next 6 connect (and read e1 from the start).
    const closed = await page.evaluate(() => window.weirTails.closeLive());
    check(same(closed, lit), `the page closed the ${closed.length} live tails`);
    await waitTails(page, (st, a) => st.filter((t, i) => !a.closed.includes(i) && t.readyState === 1 &&
                                                         t.shown.length >= 1).length >= a.count,
                    { closed, count: HTTP1_CONNECTIONS });
    const s2 = await tails(page);
    const next = s2.map((t, i) => i).filter((i) => s2[i].readyState === 1);
    const stillWaiting = s2.filter((t) => t.readyState === 0 && t.opens === 0).length;
    const c2 = await browserConnections(weir);
    check(next.length === HTTP1_CONNECTIONS &&
          next.every((i) => !closed.includes(i) && same(s2[i].shown, want(i, 1))) &&
          stillWaiting === TAILS - 2 * HTTP1_CONNECTIONS && c2.fromBrowser === 2 * HTTP1_CONNECTIONS,
          `then the next ${next.length} connected (${next.join(', ')}) and showed e1; ${stillWaiting} ` +
          `still wait; weir accepted ${c2.fromBrowser} connections from the browser in all`);
  }
  await page.close();
  await env.stopChild(weir.child, 'SIGTERM');
}

async function main() {
  const started = Date.now();
  try {
    const site = await env.startSite();
    const browser = await env.launchChromium();
    await overHttp2(browser, site);
    await overHttp1(browser, site);
    console.log(`screenshots in ${outDir}`);
    console.log(`browser h2 test: all checks passed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } finally {
    await env.cleanup();
  }
}

main().catch((err) => {
  console.error(err.stack || String(err));
  process.exitCode = 1;
});

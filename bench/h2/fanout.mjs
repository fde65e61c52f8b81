// SSE fan-out client for bench/h2/run.sh: N live tails (`?offset=-1&live=sse`) on one stream and one
// writer appending small tagged events at a fixed rate, over HTTP/2 (h2c with prior knowledge, the tails
// spread over --conns connections, node:http2) or over HTTP/1.1 (one connection per tail, node:http).
// The same code drives both sides, so that the two rows differ only in the protocol.
//
// Delivery latency runs from just before an append is sent to the moment a tail's bytes carrying it
// arrive, on this process's one monotonic clock. Every (tail, event) pair must arrive exactly once:
// lost and duplicated deliveries are counted. The server's RSS (/proc/PID/status VmRSS) is read before
// the tails open, once they are all live, at its highest during the appends (sampled every 100 ms), and
// at the end. Prints one JSON object.
//
//   node fanout.mjs --base http://127.0.0.1:4437/v1/stream --proto h2 --tails 1000 --conns 10 \
//        --events 200 --rate 20 --bytes 64 --server-pid PID
import http from 'node:http';
import http2 from 'node:http2';
import fs from 'node:fs';

function parseArgs(argv) {
  const o = {
    base: 'http://127.0.0.1:4437/v1/stream', proto: 'h2', tails: 1000, conns: 10, events: 200, rate: 20,
    bytes: 64, stream: `fanout-${process.pid}`, serverPid: 0, deliveryTimeoutMs: 10000,
  };
  for (let i = 2; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    if (!(k in o)) throw new Error(`unknown option ${argv[i]}`);
    o[k] = typeof o[k] === 'number' ? Number(argv[i + 1]) : argv[i + 1];
  }
  if (o.proto !== 'h1' && o.proto !== 'h2') throw new Error('--proto is h1 or h2');
  return o;
}

const opt = parseArgs(process.argv);
const nowNs = () => process.hrtime.bigint();
const url = new URL(`${opt.base}/${opt.stream}`);

function rssBytes() {
  if (!opt.serverPid) return 0;
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${opt.serverPid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

function payload(k) {
  const tag = `#${k};`;
  return tag + '.'.repeat(Math.max(0, opt.bytes - tag.length));
}

// --- one request/response helper per protocol: returns {status, body} ---
let h2sessions = [];
let h2writer = null;
const h1agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
const h1writerAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function h2connect() {
  return new Promise((resolve, reject) => {
    const s = http2.connect(url.origin);
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
}

function simpleRequest(method, body, contentType) {
  return new Promise((resolve, reject) => {
    const done = (status, res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    };
    const headers = contentType ? { 'content-type': contentType } : {};
    if (opt.proto === 'h2') {
      const req = h2writer.request({ ':method': method, ':path': url.pathname, ...headers });
      req.once('response', (h) => done(h[':status'], req));
      req.once('error', reject);
      req.end(body);
    } else {
      const req = http.request(url, { method, headers, agent: h1writerAgent }, (res) => done(res.statusCode, res));
      req.once('error', reject);
      req.end(body);
    }
  });
}

// --- tails ---
const sentNs = new Array(opt.events).fill(0n);
const seen = new Uint8Array(opt.tails * opt.events);
const latenciesUs = [];
let delivered = 0, duplicated = 0, badEvents = 0, tailErrors = 0, live = 0;
const expected = opt.tails * opt.events;
let onAllDelivered = null;

function makeParser(tail) {
  let buf = '';
  return (chunk) => {
    const at = nowNs();
    buf += chunk;
    let end;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, end);
      buf = buf.slice(end + 2);
      let type = 'message';
      const data = [];
      for (const line of ev.split('\n')) {
        if (line.startsWith('event:')) type = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (type !== 'data') continue;
      const d = data.join('\n');
      // A data event holds one or more whole payloads (appends may be batched into one event).
      if (d.length === 0 || d.length % opt.bytes !== 0) { badEvents++; continue; }
      for (let off = 0; off < d.length; off += opt.bytes) {
        const m = /^#(\d+);/.exec(d.slice(off, off + 16));
        const k = m ? Number(m[1]) : -1;
        if (k < 0 || k >= opt.events || sentNs[k] === 0n) { badEvents++; continue; }
        const slot = tail * opt.events + k;
        if (seen[slot]) { duplicated++; continue; }
        seen[slot] = 1;
        delivered++;
        latenciesUs.push(Number(at - sentNs[k]) / 1000);
        if (delivered === expected && onAllDelivered) onAllDelivered();
      }
    }
  };
}

const tailPath = `${url.pathname}?offset=-1&live=sse`;
const tailRequests = [];

function openTail(i) {
  return new Promise((resolve) => {
    const parse = makeParser(i);
    const onResponse = (status, stream) => {
      if (status !== 200) { tailErrors++; resolve(); return; }
      live++;
      stream.setEncoding('utf8');
      stream.on('data', parse);
      stream.on('error', () => { tailErrors++; });
      resolve();
    };
    if (opt.proto === 'h2') {
      const req = h2sessions[i % h2sessions.length].request({ ':path': tailPath });
      req.once('response', (h) => onResponse(h[':status'], req));
      req.once('error', () => { tailErrors++; resolve(); });
      req.end();
      tailRequests.push(req);
    } else {
      const req = http.request(`${url.origin}${tailPath}`, { agent: h1agent }, (res) => onResponse(res.statusCode, res));
      req.once('error', () => { tailErrors++; resolve(); });
      req.end();
      tailRequests.push(req);
    }
  });
}

function quantile(sorted, q) {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

async function main() {
  if (opt.proto === 'h2') {
    h2writer = await h2connect();
    for (let c = 0; c < opt.conns; c++) h2sessions.push(await h2connect());
  }
  const created = await simpleRequest('PUT', '', 'text/plain');
  if (created.status !== 201 && created.status !== 200) throw new Error(`PUT ${url}: ${created.status} ${created.body}`);
  const rssBefore = rssBytes();

  const t0 = nowNs();
  await Promise.all(Array.from({ length: opt.tails }, (_, i) => openTail(i)));
  const openMs = Number(nowNs() - t0) / 1e6;
  await new Promise((r) => setTimeout(r, 1000));  // let the server settle its buffers for the live tails
  const rssLive = rssBytes();

  let rssPeak = rssLive;
  const sampler = setInterval(() => { rssPeak = Math.max(rssPeak, rssBytes()); }, 100);
  const cpu0 = process.cpuUsage();
  const w0 = nowNs();
  const allDelivered = new Promise((r) => { onAllDelivered = r; });
  const appendLatUs = [];
  let appendErrors = 0;
  const intervalNs = BigInt(Math.round(1e9 / opt.rate));
  for (let k = 0; k < opt.events; k++) {
    const due = w0 + BigInt(k) * intervalNs;
    const wait = Number(due - nowNs()) / 1e6;
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    sentNs[k] = nowNs();
    const res = await simpleRequest('POST', payload(k), 'text/plain');
    appendLatUs.push(Number(nowNs() - sentNs[k]) / 1000);
    if (res.status < 200 || res.status > 299) appendErrors++;
  }
  const timedOut = await Promise.race([
    allDelivered.then(() => false),
    new Promise((r) => setTimeout(() => r(true), opt.deliveryTimeoutMs)),
  ]);
  const secs = Number(nowNs() - w0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  clearInterval(sampler);
  rssPeak = Math.max(rssPeak, rssBytes());
  const rssEnd = rssBytes();

  latenciesUs.sort((a, b) => a - b);
  appendLatUs.sort((a, b) => a - b);
  const ms = (v) => Math.round(v) / 1000;
  const out = {
    proto: opt.proto, tails: opt.tails, connections: opt.proto === 'h2' ? opt.conns : opt.tails,
    events: opt.events, rate: opt.rate, bytes: opt.bytes, live, tail_errors: tailErrors, open_ms: Math.round(openMs),
    expected, delivered, lost: expected - delivered, duplicated, bad_events: badEvents, timed_out: timedOut,
    delivery_p50_ms: ms(quantile(latenciesUs, 0.5)), delivery_p99_ms: ms(quantile(latenciesUs, 0.99)),
    delivery_max_ms: ms(latenciesUs.at(-1) ?? 0),
    append_p50_ms: ms(quantile(appendLatUs, 0.5)), append_p99_ms: ms(quantile(appendLatUs, 0.99)), append_errors: appendErrors,
    server_rss_before: rssBefore, server_rss_live: rssLive, server_rss_peak: rssPeak, server_rss_end: rssEnd,
    rss_per_tail: Math.round((rssLive - rssBefore) / opt.tails),
    client_cpu_share: Math.round(((cpu.user + cpu.system) / 1e6 / secs) * 1000) / 1000,
  };
  process.stdout.write(`${JSON.stringify(out)}\n`);

  for (const r of tailRequests) (opt.proto === 'h2' ? r.close() : r.destroy());
  for (const s of h2sessions) s.destroy();
  if (h2writer) h2writer.destroy();
  h1agent.destroy();
  h1writerAgent.destroy();
}

main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });

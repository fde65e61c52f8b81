// One plain EventSource per stream, as many as `count` (docs/browser.md, "Six connections per origin
// (HTTP/1.1), and HTTP/2").
// Each row shows its tail's readyState (connecting, live, closed), how many times the browser opened
// it, and the messages it has shown. window.weirTails lets a test (tests/node/browser_h2_test.mjs) read
// the same state and close tails.
'use strict';

const params = new URLSearchParams(location.search);
const weir = (params.get('weir') || 'http://127.0.0.1:4437').replace(/\/$/, '');
const prefix = params.get('prefix') || '/v1/stream/tails-';
const count = Math.min(1000, Math.max(1, Number(params.get('count')) || 50));
const token = params.get('token') || '';
const paths = Array.from({ length: count }, (_, i) => `${prefix}${i}`);

document.getElementById('weir').textContent = weir;
document.getElementById('streams').textContent = `${prefix}0 .. ${prefix}${count - 1}`;

async function createStreams() {
  const status = document.getElementById('create-status');
  const headers = { 'Content-Type': 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  const results = await Promise.all(paths.map((p) =>
    fetch(weir + p, { method: 'PUT', headers }).then((r) => r.status, () => 'error')));
  const ok = results.filter((s) => s === 200 || s === 201).length;
  status.textContent = `${ok} of ${count} created or there (statuses ${[...new Set(results)].join(', ')})`;
}

const stateNames = ['connecting', 'live', 'closed'];
const tails = [];  // { path, es, opens, shown: [message texts], row }

function renderSummary() {
  const by = [0, 0, 0];
  let shown = 0;
  for (const t of tails) {
    by[t.es.readyState] += 1;
    shown += t.shown.length;
  }
  document.getElementById('summary').textContent =
    `${by[1]} live, ${by[0]} connecting, ${by[2]} closed; ${shown} messages shown`;
}

function renderRow(t) {
  const state = t.es.readyState;
  t.row.className = `state-${state}`;
  const cells = t.row.children;
  cells[1].textContent = stateNames[state];
  cells[2].textContent = String(t.opens);
  cells[3].textContent = String(t.shown.length);
  cells[4].textContent = t.shown.length ? t.shown[t.shown.length - 1] : '';
  renderSummary();
}

function tail(path) {
  let url = `${weir}${path}?offset=-1&live=sse`;
  if (token) url += `&access_token=${encodeURIComponent(token)}`;
  const row = document.createElement('tr');
  for (let i = 0; i < 5; i += 1) row.append(document.createElement('td'));
  row.children[0].textContent = path;
  row.children[1].className = 'state';
  document.getElementById('tails').append(row);
  // A plain EventSource: after a lost connection the browser reconnects by itself with the last id it
  // saw as Last-Event-ID, so each tail resumes after its last message (docs/browser.md).
  const t = { path, es: new EventSource(url), opens: 0, shown: [], row };
  t.es.addEventListener('open', () => {
    t.opens += 1;
    renderRow(t);
  });
  t.es.addEventListener('data', (e) => {
    // A JSON stream: an array of the messages appended since the previous event. {text} shows its text.
    for (const m of JSON.parse(e.data)) {
      t.shown.push(m && typeof m.text === 'string' ? m.text : JSON.stringify(m));
    }
    renderRow(t);
  });
  t.es.addEventListener('control', (e) => {
    if (JSON.parse(e.data).streamClosed) t.es.close();
    renderRow(t);
  });
  t.es.addEventListener('error', () => renderRow(t));
  tails.push(t);
  renderRow(t);
}

let tailing = false;
async function tailAll() {
  if (tailing) return;
  tailing = true;
  // One request ahead of the tails, so that the browser knows how the origin speaks (ALPN: h2 or
  // http/1.1) before it opens them: not knowing yet, Chromium opens several connections at once for a
  // burst of requests, and over h2 ends up using one. An opaque (no-cors) GET of /healthz is enough.
  await fetch(`${weir}/healthz`, { mode: 'no-cors', cache: 'no-store' }).catch(() => {});
  paths.forEach(tail);
}

// Closes the tails that are live; returns their indices. Over HTTP/1.1 each frees a connection, which
// the browser gives to a waiting tail.
function closeLive() {
  const closed = [];
  tails.forEach((t, i) => {
    if (t.es.readyState === EventSource.OPEN) {
      t.es.close();
      closed.push(i);
      renderRow(t);
    }
  });
  return closed;
}

window.weirTails = {
  state: () => tails.map((t) => ({ readyState: t.es.readyState, opens: t.opens, shown: [...t.shown] })),
  closeLive,
};

document.getElementById('create').addEventListener('click', () => createStreams());
document.getElementById('tail').addEventListener('click', () => tailAll());
document.getElementById('close-live').addEventListener('click', () => closeLive());
if (params.get('tail') === '1') tailAll();

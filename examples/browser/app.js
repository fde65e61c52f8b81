// The plain-platform example: no library, no build step. Messages are JSON objects
// {text, sentAt}; the stream is application/json, so each SSE data event carries a JSON array of the
// messages appended since the previous one (PROTOCOL.md 5.8).
'use strict';

const params = new URLSearchParams(location.search);
const weir = (params.get('weir') || 'http://127.0.0.1:4437').replace(/\/$/, '');
const streamPath = params.get('stream') || '/v1/stream/browser-demo';
const token = params.get('token') || '';
const streamUrl = weir + streamPath;

document.getElementById('weir').textContent = weir;
document.getElementById('stream').textContent = streamPath;

// fetch() can send a header; an EventSource cannot (docs/browser.md: the token goes in the query).
function authHeaders() {
  return token ? { Authorization: `Bearer ${token}` } : {};
}

async function createStream() {
  const status = document.getElementById('create-status');
  const res = await fetch(streamUrl, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/json', ...authHeaders() },
  });
  status.textContent = res.ok ? `created (${res.status})` : `failed: ${res.status} ${await res.text()}`;
}

let appended = 0;
async function append(text) {
  const status = document.getElementById('append-status');
  const body = JSON.stringify({ text, sentAt: Date.now() });
  const res = await fetch(streamUrl, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...authHeaders() },
    body,
  });
  if (!res.ok) {
    status.textContent = `append failed: ${res.status} ${await res.text()}`;
    return;
  }
  appended += 1;
  status.textContent = `appended ${appended}`;
}

let opens = 0;
let shown = 0;
function tail() {
  let url = `${streamUrl}?offset=-1&live=sse`;
  if (token) url += `&access_token=${encodeURIComponent(token)}`;
  // A plain EventSource: when weir ends the response (its SSE lifetime, a restart) the browser
  // reconnects by itself after weir's retry: interval and sends the last id: it saw as Last-Event-ID,
  // so the tail resumes after the last message shown.
  const es = new EventSource(url);
  const status = document.getElementById('tail-status');
  const list = document.getElementById('messages');
  let lastId = '';
  const render = (state) => {
    status.textContent = `${state}; connections ${opens}; shown ${shown}; last id ${lastId || '-'}`;
  };
  es.addEventListener('open', () => {
    opens += 1;
    render('live');
  });
  es.addEventListener('data', (e) => {
    for (const m of JSON.parse(e.data)) {
      const li = document.createElement('li');
      const text = document.createElement('span');
      text.className = 'text';
      text.textContent = m.text;
      const latency = document.createElement('span');
      latency.className = 'latency';
      latency.textContent = `${Math.max(0, Date.now() - m.sentAt)} ms after it was sent`;
      li.append(text, latency);
      list.append(li);
      shown += 1;
    }
    lastId = e.lastEventId;
    render('live');
  });
  es.addEventListener('control', (e) => {
    const c = JSON.parse(e.data);
    lastId = e.lastEventId;
    if (c.streamClosed) {
      es.close();
      render('stream closed');
    }
  });
  es.addEventListener('error', () => {
    render(es.readyState === EventSource.CLOSED ? 'failed (closed)' : 'reconnecting');
  });
}

document.getElementById('create').addEventListener('click', () => createStream());
document.getElementById('append-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const input = document.getElementById('message');
  const text = input.value;
  input.value = '';
  append(text);
});
document.getElementById('tail').addEventListener('click', () => tail());
if (params.get('tail') === '1') tail();

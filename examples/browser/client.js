// The official client in the browser: DurableStream for create and append, stream() with live SSE
// for the tail. The client sends headers on every request (fetch), so the token goes in
// Authorization here, never in the URL.
import { DurableStream, stream } from './client/index.js';

const params = new URLSearchParams(location.search);
const weir = (params.get('weir') || 'http://127.0.0.1:4437').replace(/\/$/, '');
const url = weir + (params.get('stream') || '/v1/stream/browser-demo');
const token = params.get('token') || '';
const headers = token ? { Authorization: `Bearer ${token}` } : {};

const status = document.getElementById('tail-status');
const list = document.getElementById('messages');
const handle = new DurableStream({ url, headers, contentType: 'application/json' });

let appended = 0;
document.getElementById('append-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const input = document.getElementById('message');
  const text = input.value;
  input.value = '';
  await handle.append(JSON.stringify({ text, sentAt: Date.now() }), { contentType: 'application/json' });
  appended += 1;
  document.getElementById('append-status').textContent = `appended ${appended}`;
});

async function main() {
  try {
    await DurableStream.head({ url, headers });
  } catch {
    await DurableStream.create({ url, headers, contentType: 'application/json' });
  }
  const res = await stream({ url, headers, offset: '-1', live: 'sse', json: true });
  let shown = 0;
  res.subscribeJson((batch) => {
    for (const m of batch.items) {
      const li = document.createElement('li');
      const text = document.createElement('span');
      text.className = 'text';
      text.textContent = m.text;
      li.append(text);
      list.append(li);
      shown += 1;
    }
    status.textContent = `live; shown ${shown}; offset ${batch.offset}`;
  });
  status.textContent = 'live; shown 0';
}

main().catch((err) => {
  status.textContent = `failed: ${err}`;
});

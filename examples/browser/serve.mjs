// A static server for the browser example: this folder, and the official client's ESM build at
// /client/index.js. Usage: node serve.mjs [--port N] [--client PATH_TO_index.js]. Prints
// "serving http://127.0.0.1:PORT" once it listens (port 0: any free port). Loopback only.
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { dirname, extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const arg = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const port = Number(arg('--port', '8000'));
const clientFile = arg(
  '--client',
  join(here, '../../tests/node/node_modules/@durable-streams/client/dist/index.js'),
);
const types = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8' };

const server = createServer(async (req, res) => {
  const path = new URL(req.url, 'http://x').pathname;
  let file;
  if (path === '/client/index.js') {
    file = clientFile;
  } else {
    const rel = normalize(path === '/' ? '/index.html' : path);
    if (rel.includes('..') || !types[extname(rel)]) {
      res.writeHead(404).end('not found\n');
      return;
    }
    file = join(here, rel);
  }
  try {
    const body = await readFile(file);
    res.writeHead(200, { 'Content-Type': types[extname(file)], 'Cache-Control': 'no-store' });
    res.end(body);
  } catch {
    res.writeHead(404).end('not found\n');
  }
});
server.listen(port, '127.0.0.1', () => {
  console.log(`serving http://127.0.0.1:${server.address().port}`);
});
// A browser keeps idle connections open: close them too rather than wait for them.
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});

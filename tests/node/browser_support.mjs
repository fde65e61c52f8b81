// What the browser tests (browser_test.mjs, browser_h2_test.mjs; docs/browser.md) share: the
// command line, a scratch directory, access control (an Ed25519 JWKS and JWTs made here), TLS (a CA
// and a leaf for 127.0.0.1 made by the openssl CLI, which Chromium trusts by the leaf's key:
// --ignore-certificate-errors-spki-list, not --ignore-certificate-errors), `weir serve` with both on,
// the example pages' static server, headless Chromium, and requests from this process to weir.
// Every process started through a test_env is stopped by its PID in cleanup(), which also removes
// the scratch directory.
import { execFileSync, spawn } from 'node:child_process';
import { X509Certificate, createHash, generateKeyPairSync, sign } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';

const here = dirname(fileURLToPath(import.meta.url));
export const repo = resolve(here, '../..');

export function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
  console.log(`ok: ${what}`);
}

// node SCRIPT --weir WEIR_BINARY --out DIR [--chromium PATH]
export function parseArgs(script) {
  const args = process.argv.slice(2);
  const arg = (name, fallback) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : fallback;
  };
  const parsed = { weirBin: arg('--weir'), outDir: arg('--out'),
                   chromiumPath: arg('--chromium', '/usr/bin/chromium') };
  if (!parsed.weirBin || !parsed.outDir) {
    console.error(`usage: node ${script} --weir WEIR_BINARY --out DIR [--chromium PATH]`);
    process.exit(2);
  }
  mkdirSync(parsed.outDir, { recursive: true });
  return parsed;
}

function waitExit(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((r) => child.once('exit', () => r()));
}

const b64url = (v) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
export const issuer = 'weir-browser-test';

// The scratch directory `weir-<name>-*` under the system's tmp, and everything made in it.
export function createTestEnv(name, { weirBin, chromiumPath }) {
  const work = mkdtempSync(join(tmpdir(), `weir-${name}-`));
  const children = new Set();  // processes started here, stopped by PID in cleanup()

  // ---- access control: an Ed25519 key, its JWKS, and short-lived JWTs (docs/security.md) ----
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const jwksFile = join(work, 'jwks.json');
  writeFileSync(jwksFile, JSON.stringify({
    keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'browser-test', use: 'sig', alg: 'EdDSA' }],
  }));
  function makeJwt(scope = 'read,write:/v1/stream/') {
    const now = Math.floor(Date.now() / 1000);
    const head = b64url({ alg: 'EdDSA', typ: 'JWT', kid: 'browser-test' });
    // exp within --query-token-max-ttl-s (600): the same token may then ride in an EventSource's URL.
    const claims = b64url({ iss: issuer, aud: 'weir', iat: now, exp: now + 590, scope });
    const sig = sign(null, Buffer.from(`${head}.${claims}`), privateKey).toString('base64url');
    return `${head}.${claims}.${sig}`;
  }

  // ---- TLS: a CA and a leaf for 127.0.0.1 made by the openssl CLI (keys only in `work`) ----
  function makeCertificates() {
    const run = (...a) => execFileSync('openssl', a, { cwd: work, stdio: ['ignore', 'ignore', 'pipe'] });
    run('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key',
        '-out', 'ca.pem', '-days', '2', '-subj', '/CN=weir browser test CA');
    run('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'leaf.key',
        '-out', 'leaf.csr', '-subj', '/CN=127.0.0.1');
    writeFileSync(join(work, 'ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n' +
                                     'extendedKeyUsage=serverAuth\n');
    run('x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-set_serial', '0x5152',
        '-days', '2', '-extfile', 'ext', '-out', 'leaf.pem');
    const leaf = new X509Certificate(readFileSync(join(work, 'leaf.pem')));
    // Chromium trusts a server key named by the base64 SHA-256 of its SubjectPublicKeyInfo.
    const spki = createHash('sha256').update(leaf.publicKey.export({ type: 'spki', format: 'der' }))
      .digest('base64');
    return { cert: join(work, 'leaf.pem'), key: join(work, 'leaf.key'), ca: readFileSync(join(work, 'ca.pem')),
             spki };
  }
  const tls = makeCertificates();

  // A request from this process to weir over TLS (HTTP/1.1: node's https offers no ALPN), trusting only
  // the test CA. Each request has a connection of its own (no keep-alive agent), so that weir's count of
  // accepted connections minus `connections.get(origin)` is exactly what the browser opened.
  const connections = new Map();  // origin -> connections opened from here since its weir started
  function weirRequest(url, { method = 'GET', headers = {}, body } = {}) {
    const origin = new URL(url).origin;
    connections.set(origin, (connections.get(origin) ?? 0) + 1);
    return new Promise((resolveReq, rejectReq) => {
      const req = httpsRequest(url, { method, headers, ca: tls.ca, agent: false }, (res) => {
        let text = '';
        res.on('data', (c) => { text += c; });
        res.on('end', () => resolveReq({ status: res.statusCode, headers: res.headers, body: text }));
      });
      req.on('error', rejectReq);
      req.end(body);
    });
  }

  // Starts `cmd argv`, resolves with the first output match of `re`; rejects if the process exits first.
  function startProcess(what, cmd, argv, re, logFile) {
    return new Promise((resolveStart, rejectStart) => {
      const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
      children.add(child);
      let log = '';
      let matched = false;
      const onData = (chunk) => {
        log += chunk.toString();
        if (logFile) writeFileSync(logFile, log);
        const m = !matched && log.match(re);
        if (m) {
          matched = true;
          resolveStart({ child, match: m, log: () => log });
        }
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.on('exit', (code, signal) => {
        children.delete(child);
        if (!matched) rejectStart(new Error(`${what} exited (${code ?? signal}) before it was ready:\n${log}`));
      });
    });
  }

  // Sends `signal`; a process still there after 10 s gets SIGKILL (a bound, not a synchronisation).
  async function stopChild(child, signal) {
    if (child.exitCode !== null || child.signalCode !== null) return;
    process.kill(child.pid, signal);
    let timer;
    const bound = new Promise((r) => { timer = setTimeout(() => r('late'), 10_000); });
    if (await Promise.race([waitExit(child).then(() => 'exited'), bound]) === 'late') {
      console.error(`pid ${child.pid} did not exit on ${signal}: SIGKILL`);
      process.kill(child.pid, 'SIGKILL');
      await waitExit(child);
    }
    clearTimeout(timer);
  }

  // `weir serve` with TLS, access control and cors-allowed-origins `allowedOrigin`, on `port` (0: any)
  // and `dataDir`, plus `extraArgs`. Ready once it logs its address and answers /healthz.
  async function startWeir({ port = 0, dataDir, allowedOrigin, extraArgs = [] }) {
    const w = await startProcess(
      'weir', weirBin,
      ['serve', '--listen', `127.0.0.1:${port}`, '--data-dir', dataDir, '--threads', '2',
       '--tls-cert', tls.cert, '--tls-key', tls.key, '--cors-allowed-origins', allowedOrigin,
       '--jwks-file', jwksFile, '--jwt-issuer', issuer, '--jwt-audience', 'weir', ...extraArgs],
      /listening on 127\.0\.0\.1:(\d+)/, join(work, `weir-${Date.now()}.log`));
    const url = `https://127.0.0.1:${w.match[1]}`;
    connections.set(url, 0);  // a new process: its counters start again
    const res = await weirRequest(`${url}/healthz`);
    if (res.status !== 200) throw new Error(`weir /healthz: ${res.status}`);
    console.log(`weir (pid ${w.child.pid}) serving ${url}`);
    return { child: w.child, url, port: Number(w.match[1]) };
  }

  // examples/browser/serve.mjs on a free port: { url: http://127.0.0.1:PORT, port }.
  async function startSite() {
    const site = await startProcess('static server', process.execPath,
                                    [join(repo, 'examples/browser/serve.mjs'), '--port', '0'],
                                    /serving (http:\/\/127\.0\.0\.1:(\d+))/);
    return { url: site.match[1], port: Number(site.match[2]) };
  }

  let browser;
  async function launchChromium() {
    browser = await puppeteer.launch({
      executablePath: chromiumPath,
      headless: true,  // puppeteer passes --headless=new
      protocolTimeout: 60_000,
      userDataDir: join(work, 'chromium-profile'),
      // Chromium's own temporary files (a singleton socket directory) go to the scratch directory too,
      // which cleanup removes, not to /tmp.
      env: { ...process.env, TMPDIR: work },
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
             '--disable-background-networking', '--disable-component-update', '--disable-sync',
             // Trust exactly weir's key (the leaf's SPKI hash), as a pinned self-signed certificate.
             `--ignore-certificate-errors-spki-list=${tls.spki}`],
    });
    console.log(`chromium ${await browser.version()} (pid ${browser.process().pid})`);
    return browser;
  }

  async function cleanup() {
    if (browser) {
      const pid = browser.process()?.pid;
      await browser.close().catch(() => {});
      if (pid) {
        try { process.kill(pid, 'SIGKILL'); } catch { /* already gone */ }
      }
    }
    for (const child of [...children]) await stopChild(child, 'SIGTERM');
    rmSync(work, { recursive: true, force: true });
  }

  return { work, tls, makeJwt, weirRequest, connections, startProcess, stopChild, startWeir, startSite,
           launchChromium, cleanup };
}

// weir's /metrics as { name: value } (samples without labels), read with an admin token.
export async function readMetrics(env, weirUrl, adminToken) {
  const res = await env.weirRequest(`${weirUrl}/metrics`,
                                    { headers: { Authorization: `Bearer ${adminToken}` } });
  if (res.status !== 200) throw new Error(`weir /metrics: ${res.status} ${res.body}`);
  const out = {};
  for (const line of res.body.split('\n')) {
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*) (\S+)$/);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

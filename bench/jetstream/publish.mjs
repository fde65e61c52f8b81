// bench/jetstream/publish.mjs: closed-loop JetStream publishers, the peer of `weir bench`'s
// many-streams workload in bench/compare --cluster --peers jetstream.
//
//   node bench/jetstream/publish.mjs --servers 127.0.0.1:PORT --writers 64 --secs 10 [--warmup-secs 2]
//        [--bytes 256] [--stream NAME] [--replicas 3] [--connections per-writer|N] [--procs P]
//        [--create] [--delete] [--server-pids PID,PID,...] [--out FILE]
//
// W writers, each publishing one message of --bytes to its own subject (NAME.w<i>) of one stream
// and waiting for the stream's acknowledgement (js.publish resolves with the PubAck once the stream's
// leader has the message stored on a quorum of its replicas) before it publishes the next, the way a
// weir bench writer waits for each append's 2xx before the next. Every writer connects to the one
// server given, so the cluster is driven through one node. Acks completed in the --secs window after
// the warm-up are counted; their latency (publish call to ack) goes into a histogram of 3 significant
// digits. --procs P splits the writers over P child processes (one Node thread may not drive 256
// writers) and merges their histograms. Prints one JSON object (or writes it to --out): acks/s,
// p50/p99/p999/max ms, errors by kind, and each process's CPU share of one core over the window
// (client_saturated when any is above 0.9, as weir bench flags its own generator). --server-pids: the
// servers' CPU seconds (utime+stime from /proc/PID/stat) over the same window, and per ack.
import { fork } from "node:child_process";
import { createRequire } from "node:module";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
// The client is the peer's own, pinned in tests/node/package.json with the other test tools.
const require = createRequire(path.join(here, "../../tests/node/package.json"));
const nats = require("nats");
const natsVersion = require("nats/package.json").version;

function parseArgs(argv) {
  const o = {
    servers: "127.0.0.1:4222",
    writers: 64,
    secs: 10,
    warmupSecs: 2,
    bytes: 256,
    stream: "BENCH",
    replicas: 3,
    connections: "per-writer",
    procs: 1,
    create: false,
    delete: false,
    out: "",
    serverPids: [],
    child: false,
    first: 0,
  };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    switch (a) {
      case "--servers": o.servers = next(); break;
      case "--writers": o.writers = Number(next()); break;
      case "--secs": o.secs = Number(next()); break;
      case "--warmup-secs": o.warmupSecs = Number(next()); break;
      case "--bytes": o.bytes = Number(next()); break;
      case "--stream": o.stream = next(); break;
      case "--replicas": o.replicas = Number(next()); break;
      case "--connections": o.connections = next(); break;
      case "--procs": o.procs = Number(next()); break;
      case "--create": o.create = true; break;
      case "--delete": o.delete = true; break;
      case "--out": o.out = next(); break;
      case "--server-pids": o.serverPids = next().split(",").filter(Boolean).map(Number); break;
      case "--child": o.child = true; break;
      case "--first": o.first = Number(next()); break;
      default: throw new Error(`unknown argument ${a}`);
    }
  }
  if (!(o.writers >= 1) || !(o.secs > 0) || !(o.warmupSecs >= 0) || !(o.bytes >= 1) || !(o.procs >= 1))
    throw new Error("--writers, --secs, --bytes and --procs must be positive");
  return o;
}

// Latency in microseconds, kept to 3 significant digits (at most 0.5% off), in a sparse map so that
// the children's histograms merge by adding counts.
function bucket(us) {
  if (us < 1000) return Math.round(us);
  const step = 10 ** (Math.floor(Math.log10(us)) - 2);
  return Math.round(us / step) * step;
}

function percentileMs(hist, p) {
  const keys = [...hist.keys()].sort((a, b) => a - b);
  let total = 0;
  for (const k of keys) total += hist.get(k);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil((p / 100) * total));
  let seen = 0;
  for (const k of keys) {
    seen += hist.get(k);
    if (seen >= rank) return k / 1000;
  }
  return keys[keys.length - 1] / 1000;
}

// CPU seconds (user + system) a process has used, from /proc/PID/stat fields 14 and 15 (in clock ticks;
// 100 a second on Linux).
function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function sampleServers(pids, startAt, endAt) {
  const at = (t, f) => setTimeout(f, Math.max(0, t - Date.now()));
  const sample = { start: null, end: null };
  at(startAt, () => { sample.start = pids.map(cpuSeconds); });
  at(endAt, () => { sample.end = pids.map(cpuSeconds); });
  return sample;
}

function connectOptions(o) {
  // One server only: the client must not wander to the other nodes through the cluster's gossip.
  return { servers: o.servers, noRandomize: true, ignoreClusterUpdates: true, maxReconnectAttempts: 0 };
}

// The stream exists once the cluster has a meta leader; right after start-up adding it fails with
// "JetStream system temporarily unavailable" for a while, so it is retried for up to 60 s.
async function createStream(o) {
  const nc = await nats.connect(connectOptions(o));
  const jsm = await nc.jetstreamManager();
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await jsm.streams.add({
        name: o.stream,
        subjects: [`${o.stream}.>`],
        storage: nats.StorageType.File,
        num_replicas: o.replicas,
        retention: nats.RetentionPolicy.Limits,
      });
      break;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  // A stream's leader is elected after the add returns; the first publish would otherwise wait on it.
  for (;;) {
    try {
      const info = await jsm.streams.info(o.stream);
      // A single server's stream (no cluster) has no leader to wait for.
      if (o.replicas === 1 && !info.cluster?.name) break;
      if (info.cluster?.leader && (info.cluster.replicas ?? []).length + 1 >= o.replicas) break;
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
    if (Date.now() > deadline) throw new Error(`stream ${o.stream} has no leader with ${o.replicas} replicas`);
    await new Promise((r) => setTimeout(r, 100));
  }
  await nc.close();
}

async function streamInfo(o) {
  const nc = await nats.connect(connectOptions(o));
  const jsm = await nc.jetstreamManager();
  const info = await jsm.streams.info(o.stream);
  await nc.close();
  return info;
}

async function deleteStream(o) {
  const nc = await nats.connect(connectOptions(o));
  const jsm = await nc.jetstreamManager();
  await jsm.streams.delete(o.stream);
  await nc.close();
}

// One process's writers. `startAt` and `endAt` are Date.now() times shared by every process: acks of
// publishes sent in [startAt, endAt) are counted; no publish is sent after endAt.
async function runWriters(o, writers, first, startAt, endAt) {
  const perWriter = o.connections === "per-writer";
  const nConn = perWriter ? writers : Math.max(1, Math.min(writers, Number(o.connections)));
  const conns = [];
  for (let i = 0; i < nConn; ++i) conns.push(await nats.connect(connectOptions(o)));
  const jss = conns.map((nc) => nc.jetstream({ timeout: 10_000 }));
  const payload = new Uint8Array(o.bytes).fill(0x6a);
  const hist = new Map();
  const errorKinds = {};
  let acks = 0;
  let errors = 0;
  let cpuStart = null;
  const cpuTimer = setTimeout(() => { cpuStart = process.cpuUsage(); }, Math.max(0, startAt - Date.now()));

  async function writer(i) {
    const js = jss[i % nConn];
    const subject = `${o.stream}.w${first + i}`;
    while (Date.now() < endAt) {
      const sentAt = Date.now();
      const t0 = process.hrtime.bigint();
      try {
        await js.publish(subject, payload);
        if (sentAt >= startAt) {
          const us = Number(process.hrtime.bigint() - t0) / 1000;
          const k = bucket(us);
          hist.set(k, (hist.get(k) ?? 0) + 1);
          ++acks;
        }
      } catch (err) {
        if (sentAt >= startAt) {
          ++errors;
          const kind = String(err?.code ?? err?.message ?? err).slice(0, 48);
          errorKinds[kind] = (errorKinds[kind] ?? 0) + 1;
        }
      }
    }
  }
  await Promise.all(Array.from({ length: writers }, (_, i) => writer(i)));
  clearTimeout(cpuTimer);
  const cpu = process.cpuUsage(cpuStart ?? undefined);
  const wall = Math.max(1, Date.now() - startAt) / 1000;
  for (const nc of conns) await nc.close();
  return {
    acks,
    errors,
    errorKinds,
    hist: [...hist.entries()],
    cpuShare: (cpu.user + cpu.system) / 1e6 / wall,
    connections: nConn,
  };
}

async function runChild(o) {
  // The parent sends {startAt, endAt} once every child has connected.
  process.on("message", async (msg) => {
    const r = await runWriters(o, o.writers, o.first, msg.startAt, msg.endAt);
    process.send(r, () => process.exit(0));
  });
  process.send({ ready: true });
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  if (o.child) return runChild(o);
  if (o.create) await createStream(o);

  const parts = [];
  const started = Date.now();
  let servers = null;
  if (o.procs === 1) {
    const startAt = Date.now() + o.warmupSecs * 1000;
    servers = sampleServers(o.serverPids, startAt, startAt + o.secs * 1000);
    parts.push(await runWriters(o, o.writers, 0, startAt, startAt + o.secs * 1000));
  } else {
    const children = [];
    let first = 0;
    for (let p = 0; p < o.procs; ++p) {
      const n = Math.floor(o.writers / o.procs) + (p < o.writers % o.procs ? 1 : 0);
      const args = ["--child", "--servers", o.servers, "--writers", String(n), "--first", String(first),
                    "--bytes", String(o.bytes), "--stream", o.stream, "--connections", o.connections];
      first += n;
      const child = fork(fileURLToPath(import.meta.url), args, { stdio: ["ignore", "inherit", "inherit", "ipc"] });
      children.push({ child, ready: new Promise((r) => child.once("message", r)) });
    }
    await Promise.all(children.map((c) => c.ready));
    const startAt = Date.now() + o.warmupSecs * 1000;
    const endAt = startAt + o.secs * 1000;
    servers = sampleServers(o.serverPids, startAt, endAt);
    const results = children.map(
      ({ child }) =>
        new Promise((resolve, reject) => {
          child.once("message", resolve);
          child.once("exit", (code) => code !== 0 && reject(new Error(`child exited with ${code}`)));
        }),
    );
    for (const { child } of children) child.send({ startAt, endAt });
    parts.push(...(await Promise.all(results)));
  }

  const hist = new Map();
  const errorKinds = {};
  let acks = 0;
  let errors = 0;
  for (const p of parts) {
    acks += p.acks;
    errors += p.errors;
    for (const [k, n] of p.hist) hist.set(k, (hist.get(k) ?? 0) + n);
    for (const [k, n] of Object.entries(p.errorKinds)) errorKinds[k] = (errorKinds[k] ?? 0) + n;
  }
  const info = await streamInfo(o);
  let serverCpu = null;
  if (o.serverPids.length && servers.start && servers.end) {
    const each = servers.end.map((e, i) => Number((e - servers.start[i]).toFixed(2)));
    const sum = each.reduce((a, b) => a + b, 0);
    serverCpu = { pids: o.serverPids, cpu_s: each, cpu_s_total: Number(sum.toFixed(2)),
                  us_per_ack: acks ? Number(((sum * 1e6) / acks).toFixed(1)) : null };
  }
  const cpu = parts.map((p) => Number(p.cpuShare.toFixed(3)));
  const result = {
    target: "jetstream",
    client: `nats.js ${natsVersion} (npm nats), ${o.procs} process(es)`,
    servers: o.servers,
    stream: o.stream,
    replicas: info.config.num_replicas,
    storage: info.config.storage,
    stream_leader: info.cluster?.leader ?? null,
    writers: o.writers,
    connections: parts.reduce((a, p) => a + p.connections, 0),
    payload_bytes: o.bytes,
    warmup_secs: o.warmupSecs,
    secs: o.secs,
    acks,
    acks_s: acks / o.secs,
    p50_ms: percentileMs(hist, 50),
    p99_ms: percentileMs(hist, 99),
    p999_ms: percentileMs(hist, 99.9),
    max_ms: percentileMs(hist, 100),
    errors,
    error_kinds: errorKinds,
    stream_messages: info.state.messages,
    client_cpu_share: cpu,
    client_saturated: cpu.some((c) => c > 0.9),
    server_cpu: serverCpu,
    wall_secs: (Date.now() - started) / 1000,
  };
  if (o.delete) await deleteStream(o);
  const text = JSON.stringify(result, null, 2) + "\n";
  if (o.out) writeFileSync(o.out, text);
  else process.stdout.write(text);
}

main().catch((err) => {
  console.error(`publish.mjs: ${err?.stack ?? err}`);
  process.exit(1);
});

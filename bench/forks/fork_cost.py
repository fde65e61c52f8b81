#!/usr/bin/env python3
"""What forks cost a weir node: RSS before and after N forks of a stream of M records, RSS and
recovery time after a restart, and the latency of 64 KiB reads of a fork (alone, and what they do to
small reads of other streams on the same core). Loopback only; the server is started and stopped
here by its PID. Used for docs/limits.md ("Forks").

  bench/forks/fork_cost.py --weir build/release/src/app/weir [--records 100000] [--forks 200]
"""
import argparse
import http.client
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def token(pos):
    return "0000000000000000_%016d" % pos


class node:
    def __init__(self, binary, data_dir, port, threads, hot_bytes, checkpoint_bytes=None):
        self.args = [binary, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data_dir,
                     "--threads", str(threads), "--fsync", "never", "--hot-bytes", str(hot_bytes)]
        if checkpoint_bytes is not None:
            self.args += ["--checkpoint-bytes", str(checkpoint_bytes)]
        self.port = port
        self.log_path = os.path.join(os.path.dirname(data_dir), f"weir-{port}.log")

    def start(self):
        self.log = open(self.log_path, "w")
        began = time.monotonic()
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT)
        while True:  # ready when it answers (the start logs its recovery first)
            if self.proc.poll() is not None:
                sys.exit("weir exited; see " + self.log_path)
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                c.request("GET", "/healthz")
                c.getresponse().read()
                c.close()
                break
            except OSError:
                time.sleep(0.02)
        self.ready_s = time.monotonic() - began

    def recovered_s(self):
        with open(self.log_path) as f:
            m = re.search(r"recovered in ([0-9.]+) s", f.read())
        return float(m.group(1)) if m else float("nan")

    def last_checkpoint(self):
        """(blob bytes, snapshot ms) of the newest checkpoint this run logged, or None."""
        with open(self.log_path) as f:
            found = re.findall(r"checkpoint at lsn \d+ \((\d+) bytes, snapshot ([0-9.]+) ms\)", f.read())
        return (int(found[-1][0]), float(found[-1][1])) if found else None

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=120)
        self.log.close()


def conn(port):
    return http.client.HTTPConnection("127.0.0.1", port, timeout=60)


def call(c, method, path, body=None, headers=None):
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    return r.status, data, r


def timed_reads(port, paths, n, size_of, rng):
    c = conn(port)
    out = []
    for _ in range(n):
        p = rng.choice(paths)
        at = rng.randrange(0, size_of(p))
        t = time.perf_counter()
        st, data, _ = call(c, "GET", f"{p}?offset={token(at)}")
        out.append((time.perf_counter() - t) * 1000.0)
        assert st == 200, (p, st)
    c.close()
    return out


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weir", required=True)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--record-bytes", type=int, default=100)
    ap.add_argument("--forks", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--hot-bytes", type=int, default=256 << 20)
    ap.add_argument("--port", type=int, default=47311)
    ap.add_argument("--checkpoint-bytes", type=int, default=None,
                    help="also report the checkpoint taken after the forks (a small value forces one)")
    ap.add_argument("--chain", type=int, default=0,
                    help="instead: a chain of N forks (each of the previous, at its tail, plus one record)")
    args = ap.parse_args()
    if args.chain:
        return chain(args)

    work = tempfile.mkdtemp(prefix="weir-fork-cost-")
    data_dir = os.path.join(work, "data")
    n = node(args.weir, data_dir, args.port, args.threads, args.hot_bytes, args.checkpoint_bytes)
    n.start()
    c = conn(args.port)
    rec = b"x" * (args.record_bytes - 1) + b"\n"
    ct = {"Content-Type": "application/octet-stream"}
    assert call(c, "PUT", "/src", headers=ct)[0] == 201
    for i in range(args.records):
        st = call(c, "POST", "/src", body=rec, headers=ct)[0]
        assert st == 204, st
    others = [f"/other{i}" for i in range(8)]
    for p in others:
        assert call(c, "PUT", p, body=b"small data\n" * 10, headers=ct)[0] == 201
    time.sleep(0.5)  # let the allocator settle before the baseline (measurement, not synchronisation)
    base = rss_mib(n.proc.pid)
    # Small reads of other streams while the forks are created (a fork copied its source on the
    # source's core before; now it takes a reference).
    creating = threading.Event()
    during_create = []

    def probe():
        pc = conn(args.port)
        pr = random.Random(3)
        while not creating.is_set():
            p = pr.choice(others)
            t0 = time.perf_counter()
            assert call(pc, "GET", p)[0] == 200
            during_create.append((time.perf_counter() - t0) * 1000.0)
        pc.close()

    prober = threading.Thread(target=probe)
    prober.start()
    t = time.perf_counter()
    for i in range(args.forks):
        st = call(c, "PUT", f"/fork{i}", headers={"Stream-Forked-From": "/src"})[0]
        assert st == 201, st
    fork_s = time.perf_counter() - t
    creating.set()
    prober.join()
    after = rss_mib(n.proc.pid)
    total = args.records * args.record_bytes
    forks = [f"/fork{i}" for i in range(args.forks)]
    st, data, r = call(c, "GET", f"/fork7?offset={token(total - 10)}")
    assert st == 200 and len(data) == 10, (st, len(data))
    checkpoint = None
    if args.checkpoint_bytes is not None:
        # Log enough after the forks for one more checkpoint, then wait for it to be reported.
        before = n.last_checkpoint()
        for i in range(args.checkpoint_bytes // 4096 + 2):
            assert call(c, "POST", "/other0", body=b"y" * 4096, headers=ct)[0] == 204
        for _ in range(600):
            checkpoint = n.last_checkpoint()
            if checkpoint != before:
                break
            time.sleep(0.1)  # polls the log for the checkpoint line (benchmark, not a test)
    c.close()

    rng = random.Random(1)
    alone = timed_reads(args.port, forks, 300, lambda p: total, rng)
    quiet = timed_reads(args.port, others, 300, lambda p: 110, rng)
    # Small reads of other streams while another client reads 64 KiB of forks back to back.
    stop = threading.Event()

    def hammer():
        hc = conn(args.port)
        hr = random.Random(2)
        while not stop.is_set():
            p = hr.choice(forks)
            call(hc, "GET", f"{p}?offset={token(hr.randrange(0, total))}")
        hc.close()

    th = threading.Thread(target=hammer)
    th.start()
    busy = timed_reads(args.port, others, 300, lambda p: 110, rng)
    stop.set()
    th.join()

    n.stop()
    n.start()
    restarted = rss_mib(n.proc.pid)
    recovered = n.recovered_s()
    c = conn(args.port)
    st, data, _ = call(c, "GET", f"/fork{args.forks - 1}?offset={token(total - 10)}")
    assert st == 200 and len(data) == 10, (st, len(data))
    c.close()
    cold = timed_reads(args.port, forks, 300, lambda p: total, rng)
    n.stop()
    shutil.rmtree(work)

    print(f"binary {args.weir}: {args.records} records of {args.record_bytes} B, {args.forks} forks, "
          f"--threads {args.threads} --hot-bytes {args.hot_bytes}")
    print(f"  RSS before forks {base:.0f} MiB, after {after:.0f} MiB "
          f"(+{(after - base) * 1024 * 1024 / args.forks / 1024:.1f} KiB per fork), "
          f"{args.forks} forks created in {fork_s:.2f} s")
    print(f"  after restart: RSS {restarted:.0f} MiB, recovered in {recovered:.2f} s")
    if checkpoint:
        print(f"  checkpoint after the forks: {checkpoint[0] / 1048576:.1f} MiB blob, snapshot {checkpoint[1]:.1f} ms")
    print(f"  64 KiB fork read: median {statistics.median(alone):.2f} ms, p99 {pct(alone, 0.99):.2f} ms "
          f"(after restart: median {statistics.median(cold):.2f} ms, p99 {pct(cold, 0.99):.2f} ms)")
    print(f"  small read of another stream: median {statistics.median(quiet):.2f} ms alone, "
          f"{statistics.median(busy):.2f} ms (p99 {pct(busy, 0.99):.2f}) while fork reads run, "
          f"{statistics.median(during_create):.2f} ms (p99 {pct(during_create, 0.99):.2f}, "
          f"{len(during_create)} reads) while the forks are created")


def chain(args):
    work = tempfile.mkdtemp(prefix="weir-fork-chain-")
    n = node(args.weir, os.path.join(work, "data"), args.port, args.threads, args.hot_bytes)
    n.start()
    c = conn(args.port)
    rec = b"x" * (args.record_bytes - 1) + b"\n"
    ct = {"Content-Type": "application/octet-stream"}
    assert call(c, "PUT", "/c0", headers=ct)[0] == 201
    for i in range(args.records):
        assert call(c, "POST", "/c0", body=rec, headers=ct)[0] == 204
    time.sleep(0.5)  # let the allocator settle before the baseline (measurement, not synchronisation)
    base = rss_mib(n.proc.pid)
    t = time.perf_counter()
    for i in range(1, args.chain + 1):
        assert call(c, "PUT", f"/c{i}", headers={"Stream-Forked-From": f"/c{i - 1}"})[0] == 201
        assert call(c, "POST", f"/c{i}", body=rec, headers=ct)[0] == 204
    made_s = time.perf_counter() - t
    after = rss_mib(n.proc.pid)
    total = (args.records + args.chain) * args.record_bytes
    last = f"/c{args.chain}"
    st, data, _ = call(c, "GET", f"{last}?offset={token(total - 10)}")
    assert st == 200 and len(data) == 10, (st, len(data))
    c.close()
    rng = random.Random(1)
    reads = timed_reads(args.port, [last], 200, lambda p: total, rng)
    n.stop()
    n.start()
    restarted = rss_mib(n.proc.pid)
    recovered = n.recovered_s()
    n.stop()
    shutil.rmtree(work)
    print(f"binary {args.weir}: a chain of {args.chain} forks (each of the previous, plus one record) "
          f"from a stream of {args.records} records of {args.record_bytes} B, --threads {args.threads}")
    print(f"  RSS before the chain {base:.0f} MiB, after {after:.0f} MiB, made in {made_s:.2f} s; "
          f"after restart {restarted:.0f} MiB, recovered in {recovered:.2f} s")
    print(f"  64 KiB read of the last fork: median {statistics.median(reads):.2f} ms, "
          f"p99 {pct(reads, 0.99):.2f} ms")


if __name__ == "__main__":
    main()

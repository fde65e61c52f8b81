#!/usr/bin/env python3
"""Memory of a weir node under connection loads (docs/limits.md, "Connections and live readers").

Starts `weir serve` (the given binary, defaults for every budget, a temporary data directory, one
core unless --threads), applies one load from 127.0.0.1 and prints the node's RSS (VmRSS of
/proc/PID/status) before, during and after, and the bytes per connection where that is the question.

  scripts/measure-limits.py BINARY idle N          N idle keep-alive connections (after one request)
  scripts/measure-limits.py BINARY sse N           N SSE subscribers at the tail that read
  scripts/measure-limits.py BINARY long-poll N     N long-polls waiting at the tail
  scripts/measure-limits.py BINARY slow-uploads N  N uploads declaring 30 MiB, sending 29 MiB, then stalling
  scripts/measure-limits.py BINARY sse-stuck N     N SSE subscribers that never read, then 64 x 1 MiB appends
  scripts/measure-limits.py BINARY json-readers N  N catch-up reads of one 16 MiB JSON record that never read
  scripts/measure-limits.py BINARY long-poll-woken N  N long-polls that never read, woken by one 64 KiB append
  scripts/measure-limits.py BINARY streams N       N empty streams, then N streams with one 100-byte append

Every socket is closed and the node stopped (SIGTERM to its PID) at the end.
"""
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time

MIB = 1 << 20


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def settle(pid, seconds=1.0):
    time.sleep(seconds)  # a measurement pause, not a synchronisation
    return rss_kib(pid)


def connect(port, rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect(("127.0.0.1", port))
    return s


def request(port, method, path, headers=None, body=b""):
    s = connect(port)
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    for k, v in (headers or {}).items():
        head += f"{k}: {v}\r\n"
    head += f"Content-Length: {len(body)}\r\n\r\n"
    s.sendall(head.encode() + body)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return int(data[9:12])


def read_head(s):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        sys.exit(2)
    binary, load, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    threads = "1"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    data_dir = tempfile.mkdtemp(prefix="weir-limits-")
    port = 20000 + os.getpid() % 20000
    node = subprocess.Popen(
        [binary, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data_dir, "--threads", threads,
         "--log-level", "warn"],
        stdout=subprocess.DEVNULL)
    socks = []
    try:
        for _ in range(100):
            try:
                request(port, "GET", "/healthz")
                break
            except OSError:
                time.sleep(0.05)
        path = "/v1/stream/limits"
        ctype = "application/octet-stream"
        request(port, "PUT", path, {"Content-Type": ctype})
        request(port, "POST", path, {"Content-Type": ctype}, b"x" * 1024)
        base = settle(node.pid)
        print(f"load={load} n={n} rss_before_kib={base}")
        peak = base
        if load == "idle":
            for _ in range(n):
                s = connect(port)
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
                read_head(s)
                socks.append(s)
        elif load in ("sse", "sse-stuck"):
            for _ in range(n):
                s = connect(port, rcvbuf=4096 if load == "sse-stuck" else None)
                s.sendall(f"GET {path}?offset=now&live=sse HTTP/1.1\r\nHost: t\r\n\r\n".encode())
                if load == "sse":
                    read_head(s)
                socks.append(s)
            if load == "sse-stuck":
                during = settle(node.pid)
                print(f"subscribers_open rss_kib={during} per_subscriber_bytes={(during - base) * 1024 // n}")
                chunk = b"y" * MIB
                for i in range(64):
                    request(port, "POST", path, {"Content-Type": ctype}, chunk)
                    peak = max(peak, rss_kib(node.pid))
                print(f"after_64_MiB_appended peak_rss_kib={peak}")
        elif load == "streams":
            # n empty text streams, then n more with one 100-byte append each: bytes per stream.
            for i in range(n):
                request(port, "PUT", f"/v1/stream/s-{i}", {"Content-Type": "text/plain"})
            empty = settle(node.pid)
            print(f"empty_streams rss_kib={empty} per_stream_bytes={(empty - base) * 1024 // n}")
            for i in range(n):
                request(port, "PUT", f"/v1/stream/t-{i}", {"Content-Type": "text/plain"})
                request(port, "POST", f"/v1/stream/t-{i}", {"Content-Type": "text/plain"}, b"z" * 100)
            peak = settle(node.pid)
            print(f"streams_with_100_bytes rss_kib={peak} per_stream_bytes={(peak - empty) * 1024 // n}")
        elif load == "json-readers":
            jpath = "/v1/stream/limits-json"
            request(port, "PUT", jpath, {"Content-Type": "application/json"})
            record = b'{"big":"' + b"x" * (16 * MIB) + b'"}'
            request(port, "POST", jpath, {"Content-Type": "application/json"}, record)
            base = settle(node.pid)
            print(f"with_the_record rss_kib={base}")
            for _ in range(n):
                s = connect(port, rcvbuf=4096)
                s.sendall(f"GET {jpath}?offset=-1 HTTP/1.1\r\nHost: t\r\n\r\n".encode())
                socks.append(s)
                peak = max(peak, rss_kib(node.pid))
        elif load in ("long-poll", "long-poll-woken"):
            for _ in range(n):
                s = connect(port, rcvbuf=4096 if load == "long-poll-woken" else None)
                s.sendall(f"GET {path}?offset=now&live=long-poll HTTP/1.1\r\nHost: t\r\n\r\n".encode())
                socks.append(s)
            if load == "long-poll-woken":
                waiting = settle(node.pid)
                print(f"long_polls_waiting rss_kib={waiting}")
                request(port, "POST", path, {"Content-Type": ctype}, b"w" * (64 * 1024))
                peak = max(peak, rss_kib(node.pid))
        elif load == "slow-uploads":
            refused = 0
            for _ in range(n):
                s = connect(port)
                s.sendall(f"POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: {ctype}\r\n"
                          f"Content-Length: {30 * MIB}\r\n\r\n".encode())
                socks.append(s)
            part = b"z" * MIB
            for s in socks:
                try:
                    for _ in range(29):
                        s.sendall(part)
                except OSError:
                    refused += 1  # answered 503 and closed: the body was not read
                peak = max(peak, rss_kib(node.pid))
            print(f"uploads_refused_or_cut={refused}")
        else:
            print(f"unknown load {load}")
            sys.exit(2)
        during = settle(node.pid)
        peak = max(peak, during)
        print(f"rss_during_kib={during} peak_kib={peak} per_connection_bytes={(during - base) * 1024 // n}")
    finally:
        for s in socks:
            s.close()
        node.send_signal(signal.SIGTERM)
        node.wait(timeout=30)
        subprocess.run(["rm", "-rf", data_dir])


if __name__ == "__main__":
    main()

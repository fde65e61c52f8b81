#!/usr/bin/env python3
"""Measures the memory cost of idle keep-alive connections: opens N connections to a server, makes one
request on each (so the server has created its per-connection state), then leaves them idle and reports
the server's RSS delta / N. Usage: idle_conns.py PID PORT N"""
import os
import socket
import sys
import time


def children(pid):
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
    except FileNotFoundError:
        pass
    return out


def rss_kib(pid):
    """RSS of the server process and its children (nginx workers)."""
    total = 0
    for p in [pid] + children(pid):
        with open(f"/proc/{p}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total


def main():
    pid, port, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    time.sleep(0.2)
    before = rss_kib(pid)
    socks = []
    req = b"GET /plaintext HTTP/1.1\r\nHost: bench\r\n\r\n"
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(req)
        socks.append(s)
    for s in socks:
        s.settimeout(5)
        got = b""
        while b"Hello, World!" not in got:
            chunk = s.recv(4096)
            if not chunk:
                raise RuntimeError("connection closed")
            got += chunk
    time.sleep(0.5)
    after = rss_kib(pid)
    per = (after - before) * 1024 / n
    print(f"idle connections: {n}  rss before: {before} KiB  after: {after} KiB  per connection: {per:.0f} bytes")
    for s in socks:
        s.close()


if __name__ == "__main__":
    main()

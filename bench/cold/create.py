#!/usr/bin/env python3
"""Creates many small streams on a weir node, each with one first append (bench/cold/idle-cost.sh).

  create.py HOST:PORT STREAMS BYTES     PUT /v1/stream/idle-<i> with BYTES bytes, 8 connections at once
"""
import http.client
import sys
import threading


def create(addr, first, last, step, size, failed):
    host, port = addr.split(":")
    c = http.client.HTTPConnection(host, int(port), timeout=60)
    body = b"x" * size
    for i in range(first, last, step):
        c.request("PUT", "/v1/stream/idle-%d" % i, body, {"Content-Type": "application/octet-stream"})
        r = c.getresponse()
        r.read()
        if r.status not in (200, 201):
            failed.append((i, r.status))
            return


def main():
    addr, streams, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    failed = []
    threads = [threading.Thread(target=create, args=(addr, k, streams, 8, size, failed)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        sys.exit("create.py: stream %d got %d" % failed[0])


main()

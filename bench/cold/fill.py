#!/usr/bin/env python3
"""Fills a weir node with deterministic bytes, or reads them back and compares (bench/cold/large.sh).

  fill.py write HOST:PORT GIB STREAMS         1 MiB appends round-robin over STREAMS byte streams
  fill.py verify HOST:PORT GIB STREAMS N      reads streams 0..N-1 from offset 0 and compares

Append i of stream s is 1 MiB of a pattern keyed by (s, i), so the reader recomputes it. A 503 (the
node's budget of bytes not yet in the bucket is full) is retried after its Retry-After, as a client
should.
"""
import hashlib
import http.client
import sys
import time

MIB = 1 << 20


def chunk(stream, i):
    seed = hashlib.sha256(b"%d/%d" % (stream, i)).digest()
    return (seed * (MIB // len(seed) + 1))[:MIB]


def connect(addr):
    host, port = addr.split(":")
    return http.client.HTTPConnection(host, int(port), timeout=120)


def write(addr, gib, streams):
    c = connect(addr)
    for s in range(streams):
        c.request("PUT", "/v1/stream/s%d" % s, headers={"Content-Type": "application/octet-stream"})
        r = c.getresponse()
        r.read()
        assert r.status in (200, 201), r.status
    total = gib * 1024
    refused = 0
    for n in range(total):
        s, i = n % streams, n // streams
        body = chunk(s, i)
        while True:
            c.request("POST", "/v1/stream/s%d" % s, body=body, headers={"Content-Type": "application/octet-stream"})
            r = c.getresponse()
            r.read()
            if r.status == 204:
                break
            assert r.status == 503, r.status
            refused += 1
            time.sleep(float(r.getheader("Retry-After", "1")))
    print("%d MiB in %d streams, %d appends refused (503) and retried" % (total, streams, refused))


def verify(addr, gib, streams, n):
    c = connect(addr)
    per_stream = gib * 1024 // streams
    ok = 0
    for s in range(n):
        want = hashlib.sha256()
        for i in range(per_stream):
            want.update(chunk(s, i))
        got = hashlib.sha256()
        size = 0
        offset = "-1"
        while True:
            c.request("GET", "/v1/stream/s%d?offset=%s" % (s, offset))
            r = c.getresponse()
            body = r.read()
            if r.status != 200:
                print("stream s%d: status %d at offset %s" % (s, r.status, offset))
                return
            got.update(body)
            size += len(body)
            offset = r.getheader("Stream-Next-Offset")
            if r.getheader("Stream-Up-To-Date") == "true":
                break
        ok += got.digest() == want.digest() and size == per_stream * MIB
    print("%d of %d streams (%d MiB each) read back identical" % (ok, n, per_stream))


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        verify(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))

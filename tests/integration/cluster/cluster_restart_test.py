"""A 3-node weir cluster stopped and started again keeps every stream on every node (label: integration).

Streams are written through all three nodes (plain appends, an idempotent producer, a JSON stream, a
closed stream); then
  1. every node stops on SIGTERM (status 0) and starts again on its data directory: every node
     answers the same bytes and metadata as before, the producer's last seq is a duplicate (204) and
     its next seq is accepted, appends continue where they stopped;
  2. the three are SIGKILLed at once and started again: everything acknowledged before is there.

Usage: cluster_restart_test.py WEIR_BINARY
"""
import http.client
import os
import random
import signal
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_support as cs  # noqa: E402
from cluster_support import check, failures  # noqa: E402

OCTET = {"Content-Type": "application/octet-stream"}
JSON = {"Content-Type": "application/json"}


def req(node, method, path, body=None, headers=None):
    return cs.request(node.port, method, path, body=body, headers=headers, timeout=20)


def snapshot(cluster, paths):
    """path -> (bytes, next offset, closed) as every node answers it; a mismatch between nodes fails."""
    out = {}
    for path in paths:
        views = {}
        for i, n in sorted(cluster.nodes.items()):
            data, hdrs = cs.read_stream(n, path)
            st, head, _ = req(n, "HEAD", path)
            check(st == 200, "HEAD %s on node %d: %d" % (path, i, st))
            views[i] = (data, head.get("stream-next-offset"), head.get("stream-closed") == "true")
            check(hdrs.get("stream-next-offset") == views[i][1],
                  "%s on node %d: the read's next offset %s, HEAD's %s"
                  % (path, i, hdrs.get("stream-next-offset"), views[i][1]))
        check(len(set(views.values())) == 1, "%s: the nodes differ: %s"
              % (path, {i: (len(d), o, c) for i, (d, o, c) in views.items()}))
        out[path] = views[1]
    return out


def producer_append(node, path, seq, body):
    hdrs = dict(OCTET, **{"Producer-Id": "restart-producer", "Producer-Epoch": "0",
                          "Producer-Seq": str(seq)})
    return req(node, "POST", path, body=body, headers=hdrs)[0]


def write_round(cluster, rng, tag, octet_paths, json_path, producer_path, producer_seq, expected):
    """Appends through random nodes; every one must be acknowledged. Returns the next producer seq."""
    nodes = [cluster.node(i) for i in sorted(cluster.nodes)]
    for k in range(60):
        path = octet_paths[k % len(octet_paths)]
        rec = b"%s.%d;" % (tag, k)
        n = rng.choice(nodes)
        st, _, body = req(n, "POST", path, body=rec, headers=OCTET)
        if check(st in (200, 204), "append to %s on node %d: %d %r" % (path, n.id, st, body[:200])):
            expected[path] += rec
    for k in range(10):
        n = rng.choice(nodes)
        st, _, body = req(n, "POST", json_path, body=b'{"round":"%s","k":%d}' % (tag, k), headers=JSON)
        check(st in (200, 204), "JSON append on node %d: %d %r" % (n.id, st, body[:200]))
    for _ in range(10):
        n = rng.choice(nodes)
        rec = b"%s.p%d;" % (tag, producer_seq)
        st = producer_append(n, producer_path, producer_seq, rec)
        if check(st == 200, "producer seq %d on node %d: %d" % (producer_seq, n.id, st)):
            expected[producer_path] += rec
        producer_seq += 1
    return producer_seq


def restart_and_compare(cluster, before, paths, expected, how):
    t = time.monotonic()
    cluster.start()
    cluster.wait_healthy(timeout=30)
    print("%s: restarted, every group has a leader in %.1f s" % (how, time.monotonic() - t), flush=True)
    after = snapshot(cluster, paths)
    for path in paths:
        check(after[path] == before[path], "%s: %s changed across the restart: before %d bytes, next %s, "
              "closed %s; after %d bytes, next %s, closed %s"
              % (how, path, len(before[path][0]), before[path][1], before[path][2],
                 len(after[path][0]), after[path][1], after[path][2]))
        if path in expected:
            check(after[path][0] == expected[path], "%s: %s does not hold what was acknowledged (%d bytes, "
                  "expected %d)" % (how, path, len(after[path][0]), len(expected[path])))
    return after


def main():
    weir = sys.argv[1]
    t0 = time.monotonic()
    cluster = cs.Cluster(weir, ["--threads", "2"], prefix="weir-cluster-restart-")
    rng = random.Random(7)
    ok = False
    error = None
    try:
        cluster.start()
        cluster.wait_healthy(timeout=30)
        octet_paths = ["/v1/stream/restart-%d" % k for k in range(8)]
        json_path = "/v1/stream/restart-json"
        producer_path = "/v1/stream/restart-producer"
        closed_path = "/v1/stream/restart-closed"
        paths = octet_paths + [json_path, producer_path, closed_path]
        for k, path in enumerate(paths):
            n = cluster.node(1 + k % 3)
            st, _, body = req(n, "PUT", path, headers=JSON if path == json_path else OCTET)
            check(st == 201, "PUT %s on node %d: %d %r" % (path, n.id, st, body[:200]))
        expected = {p: b"" for p in octet_paths + [producer_path]}
        seq = write_round(cluster, rng, b"r1", octet_paths, json_path, producer_path, 0, expected)
        st, _, _ = req(cluster.node(2), "POST", closed_path, body=b"last;",
                       headers=dict(OCTET, **{"Stream-Closed": "true"}))
        check(st in (200, 204), "append-and-close on node 2: %d" % st)
        before = snapshot(cluster, paths)
        check(before[closed_path] == (b"last;", before[closed_path][1], True),
              "the closed stream reads %r" % (before[closed_path],))

        print("written through all nodes, read back from each: %.1f s" % (time.monotonic() - t0), flush=True)

        # 1. SIGTERM, restart.
        t = time.monotonic()
        codes = cluster.stop_all()
        print("SIGTERM: the three stopped in %.1f s (status %s)" % (time.monotonic() - t, codes), flush=True)
        check(all(c == 0 for c in codes.values()), "SIGTERM: exit statuses %s (None: killed)" % codes)
        after = restart_and_compare(cluster, before, paths, expected, "SIGTERM")
        n = cluster.node(3)
        check(producer_append(n, producer_path, seq - 1, b"dup;") == 204,
              "the producer's last seq is not a duplicate after the restart")
        check(producer_append(n, producer_path, seq + 1, b"gap;") == 409,
              "a gap in the producer's seqs is not refused after the restart")
        st, _, _ = req(cluster.node(1), "POST", closed_path, body=b"more;", headers=OCTET)
        check(st == 409, "an append to the closed stream answers %d after the restart" % st)
        seq = write_round(cluster, rng, b"r2", octet_paths, json_path, producer_path, seq, expected)
        before = snapshot(cluster, paths)
        for path in octet_paths:
            check(before[path][0].startswith(after[path][0]), "%s: appends after the restart did not "
                  "continue the stream" % path)

        # 2. SIGKILL all three at once, restart.
        for node in cluster.nodes.values():
            os.kill(node.proc.pid, signal.SIGKILL)
        for node in cluster.nodes.values():
            node.proc.wait()
        restart_and_compare(cluster, before, paths, expected, "SIGKILL")
        check(producer_append(cluster.node(2), producer_path, seq - 1, b"dup;") == 204,
              "the producer's last seq is not a duplicate after the SIGKILL")
        check(producer_append(cluster.node(1), producer_path, seq, b"r3.p;") == 200,
              "the producer's next seq is not accepted after the SIGKILL")

        codes = cluster.stop_all()
        check(all(c == 0 for c in codes.values()), "final SIGTERM: exit statuses %s (None: killed)" % codes)
        ok = not failures
    except (RuntimeError, TimeoutError, OSError, http.client.HTTPException) as e:
        error = e
    finally:
        status = cs.conclude("cluster_restart", cluster, ok, t0, error)
    return status


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.exit(main())

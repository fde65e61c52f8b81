"""A 3-node weir cluster with a small hot budget keeps its stream data on disk where its node logs wrote
it, not in memory (label: integration; docs/replication.md, "Stream data on a cluster node").

About 16 times the hot budget is written through all three nodes (octet streams, a JSON stream, a
text stream), then:
  1. every node keeps at most its budget in memory (GET /cluster stream_data: hot_bytes <= hot_budget)
     and has evicted records; every stream reads back whole from every node (catch-up reads of cold
     records, a long-poll and an SSE read from the start, a fork created after its source's data left
     memory);
     the records point into the node logs (each byte written once per node);
  2. the node-log segments kept for deleted streams' records are deleted as more is written;
  3. node 2 is stopped (SIGTERM) and node 3 killed (SIGKILL) and both started again: raft replays their
     entries, whose records point where the node logs hold them; they still keep at most the budget in
     memory, and every stream reads back the same from every node.

Usage: cluster_data_log_test.py WEIR_BINARY
"""
import http.client
import os
import random
import signal
import socket
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_support as cs  # noqa: E402
from cluster_support import check, failures  # noqa: E402

HOT_BYTES = 256 * 1024
SEGMENT_BYTES = 64 * 1024
OCTET = {"Content-Type": "application/octet-stream"}
JSON = {"Content-Type": "application/json"}
TEXT = {"Content-Type": "text/plain"}


def req(node, method, path, body=None, headers=None):
    return cs.request(node.port, method, path, body=body, headers=headers, timeout=20)


def append(node, path, body, headers):
    """POST, retried on 503 (a leader hand-over); the final status."""
    for _ in range(50):
        st, _, text = req(node, "POST", path, body=body, headers=headers)
        if st != 503:
            return st
        time.sleep(0.1)
    return st


def stream_data(node):
    st = node.status()
    return cs.summed(st, "stream_data") if st else None  # every lane's


def wait_evicted(cluster, ids, what, evicted=True):
    """Every node in `ids` has synced what it wrote and (with `evicted`) evicted records, within its
    budget. A restarted node restores most records from its groups' snapshots, whose records stay on
    disk: it may have nothing to evict."""

    def ok():
        for i in ids:
            d = stream_data(cluster.node(i))
            if d is None or (evicted and d["hot_evicted"] == 0) or d["data_log_unsynced_bytes"] != 0:
                return False
        return True

    cs.wait_for("%s: data synced and evicted on nodes %s" % (what, ids), ok, timeout=30)
    for i in ids:
        d = stream_data(cluster.node(i))
        print("%s: node %d stream_data %s" % (what, i, d), flush=True)
        check(d["hot_bytes"] <= d["hot_budget"] == HOT_BYTES,
              "%s: node %d holds %d hot bytes, budget %d" % (what, i, d["hot_bytes"], d["hot_budget"]))
        check(d["data_log_write_failures"] == 0, "%s: node %d: data log write failures" % (what, i))


def check_reads(cluster, expected, what):
    for path, want in sorted(expected.items()):
        for i, n in sorted(cluster.nodes.items()):
            got = cs.read_stream(n, path)[0]
            check(got == want, "%s: %s on node %d reads %d bytes, expected %d%s"
                  % (what, path, i, len(got), len(want), "" if len(got) != len(want) else " (different)"))


def long_poll_from_start(node, path):
    st, hdrs, body = req(node, "GET", "%s?offset=-1&live=long-poll" % path)
    check(st == 200, "long-poll %s on node %d: %d" % (path, node.id, st))
    return body


def sse_first_data(node, path, want_bytes):
    """The data of the SSE events of `path` from the start until `want_bytes` bytes came (text stream,
    one line per event: the test writes no newlines)."""
    s = socket.create_connection((cs.HOST, node.port), timeout=20)
    try:
        s.sendall(("GET %s?offset=-1&live=sse HTTP/1.1\r\nHost: x\r\n\r\n" % path).encode())
        buf = b""
        data = b""
        deadline = time.monotonic() + 20
        while len(data) < want_bytes and time.monotonic() < deadline:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
            data = b""
            for block in buf.split(b"\n\n"):
                lines = block.split(b"\n")
                if any(line.strip() == b"event: data" for line in lines):
                    for line in lines:
                        if line.startswith(b"data:"):
                            data += line[5:].lstrip(b" ") if line[5:6] == b" " else line[5:]
        return data
    finally:
        s.close()


def main():
    weir = sys.argv[1]
    t0 = time.monotonic()
    # Small node-log segments and frequent snapshots: compaction keeps segments for their records, and
    # deletes them once the streams are gone.
    cluster = cs.Cluster(weir, ["--threads", "2", "--hot-bytes", str(HOT_BYTES), "--segment-bytes",
                                str(SEGMENT_BYTES), "--raft-segment-bytes", str(SEGMENT_BYTES),
                                "--raft-snapshot-entries", "32", "--raft-snapshot-trailing", "4"],
                         prefix="weir-cluster-data-")
    rng = random.Random(11)
    ok = False
    error = None
    try:
        cluster.start()
        cluster.wait_healthy(timeout=30)
        octet_paths = ["/v1/stream/data-%d" % k for k in range(6)]
        doomed = ["/v1/stream/doomed-%d" % k for k in range(2)]
        json_path = "/v1/stream/data-json"
        text_path = "/v1/stream/data-text"
        expected = {}
        for k, path in enumerate(octet_paths + doomed + [json_path, text_path]):
            n = cluster.node(1 + k % 3)
            h = JSON if path == json_path else TEXT if path == text_path else OCTET
            st, _, body = req(n, "PUT", path, headers=h)
            check(st == 201, "PUT %s on node %d: %d %r" % (path, n.id, st, body[:200]))
            expected[path] = b""
        # The streams deleted later first, so that their records fill data-log segments of their own.
        for r in range(64):
            for k, path in enumerate(doomed):
                body = bytes(rng.getrandbits(8) for _ in range(7000))
                check(append(cluster.node(1 + (r + k) % 3), path, body, OCTET) in (200, 204), "append to %s" % path)
                expected[path] += body
        json_items = []
        # ~4 MiB in all: 16 times the budget.
        for r in range(64):
            for k, path in enumerate(octet_paths):
                body = bytes(rng.getrandbits(8) for _ in range(7000))
                n = cluster.node(1 + (r + k) % 3)
                st = append(n, path, body, OCTET)
                check(st in (200, 204), "append to %s on node %d: %d" % (path, n.id, st))
                expected[path] += body
            item = '{"round":%d,"pad":"%s"}' % (r, "j" * 2000)
            check(append(cluster.node(1 + r % 3), json_path, item.encode(), JSON) in (200, 204),
                  "JSON append %d" % r)
            json_items.append(item)
            line = ("line %d " % r + "t" * 3000).encode()
            check(append(cluster.node(1 + r % 3), text_path, line, TEXT) in (200, 204), "text append %d" % r)
            expected[text_path] += line
        expected[json_path] = ("[" + ",".join(json_items) + "]").encode()
        print("written %d KiB: %.1f s" % (sum(len(v) for v in expected.values()) >> 10, time.monotonic() - t0),
              flush=True)
        wait_evicted(cluster, [1, 2, 3], "after the writes")

        # 1. Everything reads back from every node, most of it from the data logs.
        json_reads = {}
        for i, n in sorted(cluster.nodes.items()):
            json_reads[i] = cs.read_stream(n, json_path)[0]
        check_reads(cluster, {p: v for p, v in expected.items() if p != json_path}, "cold reads")
        for i, got in json_reads.items():
            check(got.startswith(b"[") and got.count(b'"round"') == 64 and b'"round":0,' in got,
                  "JSON stream on node %d reads %d bytes, %d items" % (i, len(got), got.count(b'"round"')))
        for i, n in sorted(cluster.nodes.items()):
            first = long_poll_from_start(n, octet_paths[0])
            check(len(first) > 0 and expected[octet_paths[0]].startswith(first),
                  "long-poll from the start on node %d: %d bytes, not the stream's first" % (i, len(first)))
            sse = sse_first_data(n, text_path, 8000)
            check(len(sse) >= 8000 and expected[text_path].startswith(sse[:8000]),
                  "SSE from the start on node %d: %d bytes, not the stream's first" % (i, len(sse)))
        # A fork of a source whose data left memory inherits it.
        fork = "/v1/stream/data-fork"
        source = octet_paths[1]
        # The fork point: half-way, on a record boundary (7000-byte records).
        point = 32 * 7000
        st, _, body = req(cluster.node(2), "PUT", fork,
                          headers=dict(OCTET, **{"Stream-Forked-From": source,
                                                 "Stream-Fork-Offset": offset_token(point)}))
        if check(st == 201, "fork of %s on node 2: %d %r" % (source, st, body[:200])):
            check(append(cluster.node(3), fork, b"fork-tail", OCTET) in (200, 204), "append to the fork")
            expected[fork] = expected[source][:point] + b"fork-tail"
            check_reads(cluster, {fork: expected[fork]}, "fork of an evicted source")
        print("read back from every node: %.1f s" % (time.monotonic() - t0), flush=True)

        # 2. Deleted streams' segments are reclaimed.
        for path in doomed:
            st, _, _ = req(cluster.node(3), "DELETE", path)
            check(st in (200, 204), "DELETE %s: %d" % (path, st))
            del expected[path]
        for r in range(24):
            body = bytes(rng.getrandbits(8) for _ in range(7000))
            path = octet_paths[r % len(octet_paths)]
            check(append(cluster.node(1 + r % 3), path, body, OCTET) in (200, 204), "append after deletes")
            expected[path] += body
        # The deleted streams' groups snapshot again (a snapshot pins the segments it references until the
        # group's next one): the same paths created anew, with more than raft-snapshot-entries appends.
        for path in doomed:
            st, _, _ = req(cluster.node(1), "PUT", path, headers=OCTET)
            check(st == 201, "PUT %s again: %d" % (path, st))
            expected[path] = b""
            for r in range(40):
                check(append(cluster.node(1 + r % 3), path, b"small", OCTET) in (200, 204), "append to %s" % path)
                expected[path] += b"small"

        def reclaimed():
            return all((stream_data(n) or {}).get("node_log_kept_dropped", 0) > 0
                       for n in cluster.nodes.values())

        cs.wait_for("kept node-log segments deleted on every node", reclaimed, timeout=40)
        for i, n in sorted(cluster.nodes.items()):
            d = stream_data(n)
            print("node %d: %d records in the node log (%d bytes), %d in the data log, %d kept segments, "
                  "%d deleted" % (i, d["node_log_records"], d["node_log_record_bytes"], d["data_log_records"],
                                  d["node_log_kept_segments"], d["node_log_kept_dropped"]), flush=True)
            # Each byte written once: every record applied here points into the node log (the data log
            # holds only records that come in snapshot transfers, which a node that kept up never gets).
            check(d["node_log_records"] > 0, "node %d: no record points into its node log" % i)

        # 3. Restarts: node 2 on SIGTERM, node 3 on SIGKILL.
        n2, n3 = cluster.node(2), cluster.node(3)
        check(n2.stop() == 0, "node 2 did not stop cleanly")
        n3.kill()
        n2.start()
        n3.start()
        cluster.wait_healthy(timeout=30)
        cluster.wait_caught_up(2, timeout=60)
        cluster.wait_caught_up(3, timeout=60)
        wait_evicted(cluster, [2, 3], "after the restarts", evicted=False)
        check_reads(cluster, {p: v for p, v in expected.items() if p != json_path}, "after the restarts")
        for i, n in sorted(cluster.nodes.items()):
            check(cs.read_stream(n, json_path)[0] == json_reads[1], "JSON stream on node %d after the restarts" % i)
        for i in (2, 3):
            d = stream_data(cluster.node(i))
            check(d["hot_bytes"] <= HOT_BYTES, "node %d holds %d hot bytes after the reads" % (i, d["hot_bytes"]))
        # The replayed appends point where the node log holds them: nothing was written again.
        for i in (2, 3):
            d = stream_data(cluster.node(i))
            print("node %d after its restart: %d records in the node log, %d in the data log" % (
                i, d["node_log_records"], d["data_log_records"]), flush=True)
            check(d["node_log_records"] > 0, "node %d: no replayed record points into its node log" % i)

        codes = cluster.stop_all()
        check(all(c == 0 for c in codes.values()), "final SIGTERM: exit statuses %s (None: killed)" % codes)
        ok = not failures
    except (RuntimeError, TimeoutError, OSError, http.client.HTTPException, KeyError) as e:
        error = e
    finally:
        status = cs.conclude("cluster_data_log", cluster, ok, t0, error)
    return status


def offset_token(position):
    """The offset token of stream position `position` (src/protocol/offset_token.h)."""
    return "%016d_%016d" % (0, position)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.exit(main())

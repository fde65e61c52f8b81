"""A 3-node weir cluster takes bursts of large appends without an error (label: integration;
docs/replication-formats.md, "Node log format" and "Snapshots").

128 streams, then ROUNDS times: 128 appends of 512 KiB sent at once, one per stream, round robin over
the three nodes (64 MiB in flight). Checked:
  1. every append is answered 204 or 503: "may or may not have been applied" (outcome unknown) or
     "cannot reach a quorum" (nothing written); the 503s are counted and printed, the benchmark
     measures how rare they are (docs/benchmarks.md; before the node log bounded its batches, a
     follower's append results waited behind one batch of tens of MiB and leaders stepped down,
     turning a tenth of a round into 503s; on a loaded machine, under ASan, some remain);
  2. the cluster settles after the last round: within SETTLE_SECS every node has a quorum and all
     agree on every group's leader;
  3. every stream reads back from a node other than the one that wrote it as its records in round
     order: every acknowledged one, whole; none whose append was answered "nothing written"; of the
     unknown ones, only whole records (a read answered 503 is asked again once the cluster is
     healthy again, at most twice);
  4. no node's raft log keeps most of what was written: a snapshot keeps only the trailing entries that
     fit in a quarter of raft-snapshot-bytes (libraft counts entries only, and 128 trailing entries of
     512 KiB each would keep everything written here);
  5. the nodes held writes back (admission: each node proposes at most raft-proposal-bytes, 8 MiB by
     default, at a time, and a round brings about 21 MiB to each): their waited counts are not 0, and a
     write that waited too long is answered 503 "too many writes waiting" (nothing written).

Usage: cluster_burst_test.py WEIR_BINARY
"""
import collections
import os
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_support as cs  # noqa: E402
from cluster_support import check, failures  # noqa: E402

STREAMS = 128
ROUNDS = 5
RECORD = 512 * 1024
SETTLE_SECS = 90  # from the end of the last round until every node agrees on every group's leader
OCTET = {"Content-Type": "application/octet-stream"}


def body_of(stream, rnd):
    """A record whose bytes say which stream and round it is (read back in order)."""
    head = b"%04d-%02d|" % (stream, rnd)
    return head + bytes([65 + (stream + rnd) % 26]) * (RECORD - len(head))


def burst(cluster, rnd):
    """One round: every stream gets one record, all sent at once; the statuses, by stream."""
    statuses = [None] * STREAMS
    start = threading.Barrier(STREAMS)

    def one(i):
        node = cluster.node(1 + i % 3)
        start.wait()
        st, _, text = cs.request(node.port, "POST", "/v1/stream/burst-%d" % i, body=body_of(i, rnd),
                                 headers=OCTET, timeout=60)
        statuses[i] = (st, text[:200] if isinstance(text, (bytes, str)) else "")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(STREAMS)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return statuses, time.monotonic() - t0


def read_settled(cluster, reader, path, attempts=3):
    """A catch-up read; one answered 503 (a group without a leader that answers: an election) waits
    until the cluster is healthy again (wait_healthy, at most 30 s) and is asked again, up to
    `attempts` times in all."""
    for attempt in range(attempts):
        try:
            return cs.read_stream(reader, path, timeout=60)[0]
        except RuntimeError as e:
            if ": 503 " not in str(e) or attempt == attempts - 1:
                raise
            print("%s: %s; asked again once the cluster is healthy" % (path, e))
            cluster.wait_healthy(timeout=30)


def print_election_causes(cluster):
    """How many of the nodes' logged elections and lost leaderships had each cause (docs/replication.md,
    "Elections"; the log keeps 20 lines per 10 s and node, so these are a sample)."""
    known = ("election timeout: nothing of this group", "election timeout: no leader known",
             "election timeout: the election of term", "leadership transfer", "a newer term",
             "no majority answered", "the leader's connection closed")
    causes = collections.Counter()
    for line in cluster.grep_logs(r"stands for election|no longer leads"):
        what = "stands for election" if "stands for election" in line else "no longer leads"
        causes["%s: %s" % (what, next((k for k in known if k in line), "other"))] += 1
    for cause, n in causes.most_common():
        print("logged %5d x %s" % (n, cause))


def main():
    weir = sys.argv[1]
    t0 = time.monotonic()
    cluster = cs.Cluster(weir, extra=["--threads", "1", "--raft-snapshot-bytes", str(4 << 20)],
                         prefix="weir-cluster-burst-")
    ok = False
    try:
        cluster.start()
        cluster.wait_healthy()
        for i in range(STREAMS):
            st, _, _ = cs.request(cluster.node(1 + i % 3).port, "PUT", "/v1/stream/burst-%d" % i, headers=OCTET)
            check(st == 201, "create burst-%d: %s" % (i, st))

        acked = [set() for _ in range(STREAMS)]
        unknown = [set() for _ in range(STREAMS)]
        refused = 0  # 503 "cannot reach a quorum": nothing was written
        for rnd in range(ROUNDS):
            statuses, secs = burst(cluster, rnd)
            for i, st in enumerate(statuses):
                if st is not None and st[0] == 204:
                    acked[i].add(rnd)
                elif st is not None and st[0] == 503 and b"may or may not" in st[1]:
                    unknown[i].add(rnd)
                elif st is not None and st[0] == 503 and (b"cannot reach a quorum" in st[1] or
                                                          b"too many writes waiting" in st[1]):
                    refused += 1  # not in acked nor unknown: its record must not be read back
                else:
                    check(False, "round %d, burst-%d: %s" % (rnd, i, st))
            print("round %d: %d appends of %d KiB in %.2f s; 503s so far: %d outcome unknown, %d nothing "
                  "written" % (rnd, STREAMS, RECORD // 1024, secs, sum(len(u) for u in unknown), refused))

        # 2. The cluster settles once the bursts are over: every node has a quorum and all agree on every
        # group's leader (on a machine loaded past the election timeout, the bursts start elections).
        settle = time.monotonic()
        cluster.wait_healthy(timeout=SETTLE_SECS)
        print("settled %.1f s after the last round" % (time.monotonic() - settle))

        # 3. In order, every acknowledged record, from another node than the writer. A 503 is asked again
        # once the cluster is healthy again (read_settled): a leadership that moves now (balance-leaders)
        # may leave a group without a leader for an election.
        for i in range(STREAMS):
            reader = cluster.node(1 + (i + 1) % 3)
            data = read_settled(cluster, reader, "/v1/stream/burst-%d" % i)
            rounds = []
            for at in range(0, len(data), RECORD):
                rnd = int(data[at + 5:at + 7]) if data[at:at + 4] == b"%04d" % i else -1
                ok = 0 <= rnd < ROUNDS and data[at:at + RECORD] == body_of(i, rnd)
                check(ok, "burst-%d read from node %d: no whole record at %d" % (i, reader.id, at))
                rounds.append(rnd)
            check(rounds == sorted(rounds) and acked[i] <= set(rounds) <= acked[i] | unknown[i],
                  "burst-%d read from node %d: rounds %s, acknowledged %s, unknown %s" %
                  (i, reader.id, rounds, sorted(acked[i]), sorted(unknown[i])))

        # 4. The raft logs keep a bounded part of what was written.
        written = STREAMS * ROUNDS * RECORD
        waited = 0
        for i in (1, 2, 3):
            st = cluster.node(i).status()
            live = st["node_log"]["live_bytes"]
            terms = sorted({g["term"] for g in st["raft_groups"]})
            print("node %d: node log live %.0f MB of %.0f MB written; terms %s; snapshots %s; peers %s" %
                  (i, live / 1e6, written / 1e6, terms, st["snapshots"], st["peers"]))
            check(live < written * 3 // 4, "node %d keeps %d of %d bytes written in its raft log" %
                  (i, live, written))
            print("node %d: admission %s" % (i, st["admission"]))
            print("node %d: leadership %s; check-quorum contacts vouched %s" %
                  (i, st["leadership"], st.get("contacts_vouched")))
            waited += st["admission"]["waited"] + st["admission"]["expired"]
        # 5. Admission held writes back.
        check(waited > 0, "no node held a write back for admission")
        print_election_causes(cluster)
        ok = not failures
    except Exception as e:  # noqa: BLE001 - any failure ends the test with the nodes stopped
        return cs.conclude("cluster_burst", cluster, False, t0, e)
    return cs.conclude("cluster_burst", cluster, ok, t0)


if __name__ == "__main__":
    sys.exit(main())

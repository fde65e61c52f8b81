"""Raft group snapshots on a real 3-node cluster (label: integration; docs/replication.md, "Snapshots").

The nodes snapshot every group every 16 entries and keep 4 entries after a snapshot, with a 64 KiB hot
budget (so most records are cold, in the data log, and snapshots reference them instead of holding
them). Then:
  1. streams written through all three nodes read back the same on every node; every node took
     snapshots;
  2. node 3 is SIGKILLed and the others write on, among it records of 100-300 KiB (several MiB per
     group): the groups forget the entries node 3 lacks, so when it starts again the leaders must
     install their snapshots on it; node 3 cannot read their data logs, so the records the snapshots
     reference cross in chunks (at most 1 MiB each; a group's take several) into node 3's own data
     log before each install; it then reads every stream as the others do;
  3. every node is stopped and started: each restores its groups from the snapshots in its node log
     (referencing its own data log) plus the entries after them, and reads the same;
  4. a node 4 joins (--join; POST /cluster/members) after the entries were forgotten: it can only catch
     up from snapshots, and then reads the same.

Usage: cluster_snapshot_test.py WEIR_BINARY   (WEIR_KEEP_TEST_DIR=1 keeps the logs of a run that passed)
"""
import os
import random
import shutil
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_support as cs  # noqa: E402
from cluster_support import HOST, check, failures, wait_for  # noqa: E402

GROUPS = 8
STREAMS = 12
OCTET = {"Content-Type": "application/octet-stream"}
SETTINGS = ["--threads", "1", "--raft-groups", str(GROUPS), "--raft-snapshot-entries", "16",
            "--raft-snapshot-trailing", "4", "--hot-bytes", "65536"]


def req(node, method, path, body=None, headers=None):
    return cs.request(node.port, method, path, body=body, headers=headers, timeout=20)


class Writer:
    """Appends of random sizes (100 B to 3 KiB) through the given nodes; remembers what each stream
    should hold."""

    def __init__(self):
        self.expected = {}
        self.rng = random.Random(7)

    def create(self, node, path):
        st, _, body = req(node, "PUT", path, headers=OCTET)
        check(st == 201, "PUT %s on node %d: %d %r" % (path, node.id, st, body[:200]))
        self.expected[path] = b""

    def round(self, nodes, tag, count):
        paths = sorted(self.expected)
        for k in range(count):
            path = paths[k % len(paths)]
            rec = (b"%s.%d:" % (tag.encode(), k)) + bytes([65 + k % 26]) * self.rng.randint(100, 3000)
            node = nodes[k % len(nodes)]
            st, _, body = req(node, "POST", path, body=rec, headers=OCTET)
            if check(st in (200, 204), "append %s.%d to %s on node %d: %d %r" % (tag, k, path, node.id, st, body[:200])):
                self.expected[path] += rec

    def big_round(self, nodes, tag, count):
        """Appends of 100-300 KiB: what makes a group's snapshot data span several chunks."""
        paths = sorted(self.expected)
        for k in range(count):
            path = paths[(k * 5) % len(paths)]
            rec = (b"%s.%d:" % (tag.encode(), k)) + bytes([97 + k % 26]) * self.rng.randint(100 << 10, 300 << 10)
            node = nodes[k % len(nodes)]
            st, _, body = req(node, "POST", path, body=rec, headers=OCTET)
            if check(st in (200, 204), "append %s.%d to %s on node %d: %d %r" % (tag, k, path, node.id, st, body[:200])):
                self.expected[path] += rec

    def verify(self, node, when):
        bad = [p for p, want in sorted(self.expected.items()) if cs.read_stream(node, p)[0] != want]
        check(not bad, "%s: node %d reads every stream as written (differs: %s)" % (when, node.id, bad[:5]))


def snapshots(node):
    st = node.status()
    return cs.summed(st, "snapshots") if st else None  # every lane's


def main():
    cluster = cs.Cluster(sys.argv[1], extra=SETTINGS, size=4, prefix="weir-snapshot-")
    workdir = cluster.workdir
    cluster.weir = os.path.join(workdir, "weir")
    shutil.copy2(sys.argv[1], cluster.weir)  # a rebuild during the test must not pull it away
    ports = cluster.peer_ports
    nodes = cluster.nodes
    three = ",".join("%d=%s:%d" % (i, HOST, ports[i]) for i in (1, 2, 3))
    four = ",".join("%d=%s:%d" % (i, HOST, ports[i]) for i in (1, 2, 3, 4))
    for n in nodes.values():
        n.peers_arg = four if n.id == 4 else three
    ok = False
    began = time.monotonic()
    try:
        # 1. Data through every node; everyone snapshots.
        cluster.start([1, 2, 3])
        cluster.wait_healthy([1, 2, 3])
        w = Writer()
        for k in range(STREAMS):
            w.create(nodes[1 + k % 3], "/v1/stream/snap-%d" % k)
        w.round([nodes[1], nodes[2], nodes[3]], "a", 600)
        for i in (1, 2, 3):
            cluster.wait_caught_up(i)
            w.verify(nodes[i], "after the first writes")
            s = snapshots(nodes[i])
            check(s is not None and s["taken"] > 0, "node %d took group snapshots: %r" % (i, s))
            sd = cs.summed(nodes[i].status(), "stream_data")
            check(sd["hot_bytes"] <= sd["hot_budget"], "node %d keeps its hot budget: %r" % (i, sd))

        # 2. Node 3 misses more than the groups keep: it gets their snapshots installed.
        nodes[3].kill()
        nodes[3].stop()
        cluster.wait_healthy([1, 2])
        w.round([nodes[1], nodes[2]], "b", 300)
        w.big_round([nodes[1], nodes[2]], "big", 60)
        w.round([nodes[1], nodes[2]], "b2", 300)  # the big records synced and cold by the last snapshots
        # Once the data logs synced (every second), the snapshots taken after reference the big records.
        wait_for("the data logs of nodes 1 and 2 to sync",
                 lambda: all(cs.summed(nodes[i].status(), "stream_data")["data_log_unsynced_bytes"] == 0 for i in (1, 2)), 30)
        w.round([nodes[1], nodes[2]], "b3", 100)
        nodes[3].start()
        cluster.wait_healthy([1, 2, 3], timeout=60)
        cluster.wait_caught_up(3, timeout=60)
        s3 = snapshots(nodes[3])
        sent = sum(snapshots(nodes[i])["sent"] for i in (1, 2))
        check(s3["restored"] > 0, "node 3 restored snapshots installed by the leaders: %r" % s3)
        check(sent > 0, "the leaders sent snapshots to node 3 (%d)" % sent)
        # The installs came as chunked transfers into node 3's data log, some of several chunks.
        chunks_sent = sum(snapshots(nodes[i])["chunks_sent"] for i in (1, 2))
        check(s3["transfers_completed"] > 0, "node 3 completed snapshot transfers: %r" % s3)
        check(s3["chunks_received"] > s3["transfers_completed"],
              "some transfer to node 3 took more than one chunk: %r" % s3)
        check(s3["chunk_bytes_received"] > (1 << 20), "more than 1 MiB of records crossed in chunks: %r" % s3)
        check(chunks_sent >= s3["chunks_received"], "the leaders sent the chunks node 3 took (%d)" % chunks_sent)
        d3 = cs.summed(nodes[3].status(), "stream_data")
        check(d3["data_log_bytes_written"] >= s3["chunk_bytes_received"],
              "node 3 wrote the records it received to its data log: %r" % d3)
        for i in (1, 2, 3):
            w.verify(nodes[i], "after node 3 caught up from snapshots")

        # 3. A full restart: each node restores its own snapshots (references into its data log).
        codes = cluster.stop_all()
        check(all(codes[i] == 0 for i in (1, 2, 3)), "SIGTERM stops every node cleanly: %r" % codes)
        cluster.start([1, 2, 3])
        cluster.wait_healthy([1, 2, 3], timeout=60)
        for i in (1, 2, 3):
            s = snapshots(nodes[i])
            check(s["restored"] > 0, "node %d restored its groups from its snapshots at start: %r" % (i, s))
            w.verify(nodes[i], "after a full restart")
        w.round([nodes[3], nodes[2], nodes[1]], "c", 200)

        # 4. A new node joins after the entries are gone: snapshots only.
        n4 = nodes[4]
        n4.start(extra=["--join"])
        code, _, body = req(nodes[1], "POST", "/cluster/members?id=4&address=%s:%d" % (HOST, ports[4]))
        check(code == 202, "POST /cluster/members?id=4: 202, got %d %r" % (code, body))

        def joined():
            st = n4.status()
            return st is not None and all(4 in g["voters"] for g in st["raft_groups"]) and st

        wait_for("node 4 to be a voter of every group", joined, 90)
        cluster.wait_caught_up(4, timeout=60)
        check(snapshots(n4)["restored"] > 0, "node 4 caught up from snapshots: %r" % snapshots(n4))
        w.verify(n4, "after node 4 joined")
        w.round([n4, nodes[1]], "d", 100)
        for i in (1, 2, 3, 4):
            cluster.wait_caught_up(i)
            w.verify(nodes[i], "after writes through node 4")

        exits = cluster.unexpected_exits()
        check(not exits, "no node exited on its own: %s" % exits)
        ok = not failures
        print("snapshot test: %s in %.1f s; snapshots %s" % (
            "passed" if ok else "FAILED", time.monotonic() - began,
            {i: snapshots(n) for i, n in sorted(nodes.items()) if n.alive()}))
    except Exception as e:  # a broken cluster shows in the logs below
        failures.append("%s: %s" % (type(e).__name__, e))
        print("FAIL:", e, flush=True)
    finally:
        if not ok:
            cluster.dump_logs()
        cluster.kill_all()
        for n in nodes.values():
            if n.proc is not None:
                n.proc.wait()
        if ok and not os.environ.get("WEIR_KEEP_TEST_DIR"):
            cluster.remove()
        else:
            print("logs kept in", workdir)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""A snapshot transfer cut in the middle resumes where it stopped (label: integration; docs/replication.md,
"Snapshots").

Three nodes, 2 groups, snapshots every 16 entries (4 kept after one), a 64 KiB hot budget: the
snapshots reference records in the data log. Node 3's peer links go through proxies of this test.
  1. node 3 is stopped; the others write about 20 MB in records of 150-250 KiB (and small ones after,
     so that the snapshots taken once the data logs synced reference the large records);
  2. node 3 starts: the leaders install their snapshots on it, their records crossing in chunks; as soon
     as one leader's link has carried 2.5 MiB to node 3, node 3's links to the leaders stop moving
     (stalled, not closed: node 3 still hears the leaders, so it stands for no election and the groups
     keep their leaders, logs and snapshots). The senders wait for acknowledgements with at most 4
     chunks unacknowledged, so no transfer of 10 MB completes; node 3 writes what it got;
  3. both ends drop their transfers after 10 s without news; node 3 keeps what it wrote
     (`transfers_kept`). Writes go on meanwhile, so that the leaders take newer snapshots (as they would
     under load);
  4. node 3's links move again; libraft sends the newer snapshots, and node 3 names the records it holds,
     which the leaders skip: `transfers_resumed` > 0 on node 3, `chunk_bytes_skipped` > 0 on the leaders;
     node 3 catches up and reads every stream as the others do.

Usage: cluster_snapshot_resume_test.py WEIR_BINARY   (WEIR_KEEP_TEST_DIR=1 keeps the logs)
"""
import os
import random
import shutil
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_support as cs  # noqa: E402
from cluster_support import HOST, check, wait_for  # noqa: E402

GROUPS = 2
STREAMS = 8
OCTET = {"Content-Type": "application/octet-stream"}
SETTINGS = ["--threads", "1", "--raft-groups", str(GROUPS), "--raft-snapshot-entries", "16",
            "--raft-snapshot-trailing", "4", "--hot-bytes", "65536"]
TRIGGER = 5 << 19  # 2.5 MiB through one connection toward node 3


class CountingProxy(cs.LinkProxy):
    """A LinkProxy that counts the bytes each connection carries toward its target and, once armed,
    calls `trigger()` (once) from the pump of the first connection past `threshold` bytes, before
    forwarding more."""

    def __init__(self, target, threshold, trigger):
        self.threshold = threshold
        self.trigger = trigger
        self.armed = False
        self.fired = False
        self.peak = 0
        super().__init__(target)

    def _forwarded(self, dst, carried):
        try:
            inbound = dst.getpeername()[1] == self.target
        except OSError:
            return
        if not inbound:
            return
        with self.lock:
            fire = self.armed and not self.fired and carried >= self.threshold
            self.fired = self.fired or fire
            self.peak = max(self.peak, carried)
        if fire:
            self.trigger()


def req(node, method, path, body=None):
    return cs.request(node.port, method, path, body=body, headers=OCTET, timeout=20)


def transfers(node):
    st = node.status()
    return st["snapshots"] if st else {}


def leaders(node):
    """Group -> leader id in `node`'s view (GET /cluster)."""
    return {g["group"]: g["leader"] for g in node.status()["raft_groups"]}


def cs_get(node, key):
    return transfers(node).get(key, 0)


def main():
    weir = sys.argv[1]
    peer_ports = {i: cs.free_port() for i in (1, 2, 3)}
    outbound = {j: cs.LinkProxy(peer_ports[j]) for j in (1, 2)}  # node 3 -> node j

    def stall_outbound():
        for p in outbound.values():
            p.stall()

    inbound = CountingProxy(peer_ports[3], TRIGGER, stall_outbound)  # nodes 1, 2 -> node 3

    def peers_for(i, ports):
        def port(j):
            if i == 3:
                return ports[j] if j == 3 else outbound[j].port
            return inbound.port if j == 3 else ports[j]

        return ",".join("%d=%s:%d" % (j, HOST, port(j)) for j in sorted(ports))

    cluster = cs.Cluster(weir, SETTINGS, peers_for=peers_for, peer_ports=peer_ports, prefix="weir-snapshot-resume-")
    cluster.weir = os.path.join(cluster.workdir, "weir")
    shutil.copy2(weir, cluster.weir)  # a rebuild during the test must not pull it away
    if os.environ.get("WEIR_KEEP_TEST_DIR"):
        cluster.remove = lambda: print("logs kept in", cluster.workdir)
    nodes = cluster.nodes
    expected = {}
    rng = random.Random(11)
    t0 = time.monotonic()
    ok = False
    error = None
    try:
        cluster.start()
        cluster.wait_healthy()
        for k in range(STREAMS):
            path = "/v1/stream/resume-%d" % k
            st, _, body = req(nodes[1 + k % 2], "PUT", path)
            check(st == 201, "PUT %s: %d %r" % (path, st, body[:200]))
            expected[path] = b""

        def append(tag, count, low, high):
            paths = sorted(expected)
            for k in range(count):
                path = paths[k % len(paths)]
                rec = (b"%s.%d:" % (tag.encode(), k)) + bytes([97 + k % 26]) * rng.randint(low, high)
                node = nodes[1 + k % 2]
                st, _, body = req(node, "POST", path, rec)
                if check(st in (200, 204), "append %s.%d to %s: %d %r" % (tag, k, path, st, body[:200])):
                    expected[path] += rec

        # 1. Node 3 misses about 20 MB: the leaders forget the entries and must install snapshots.
        nodes[3].stop()
        cluster.wait_healthy([1, 2])
        append("big", 100, 150 << 10, 250 << 10)
        append("small", 100, 100, 2000)
        wait_for("the data logs of nodes 1 and 2 to sync",
                 lambda: all(nodes[i].status()["stream_data"]["data_log_unsynced_bytes"] == 0 for i in (1, 2)), 30)
        append("after", 100, 100, 2000)

        # 2. Node 3 starts; its links to the leaders stall once a transfer is under way.
        with inbound.lock:
            inbound.armed = True
        nodes[3].start()
        wait_for("2.5 MiB to cross one link toward node 3", lambda: inbound.fired, 60)
        leaders_at_cut = leaders(nodes[1])

        # 3. Both ends give up on their transfers; node 3 keeps what it wrote.
        wait_for("node 3 to keep a dropped transfer's records",
                 lambda: cs_get(nodes[3], "transfers_kept") > 0, 30)
        wait_for("the leaders to drop their transfers to node 3",
                 lambda: cs_get(nodes[1], "transfers_dropped") + cs_get(nodes[2], "transfers_dropped") > 0, 30)
        taken = cs_get(nodes[1], "taken") + cs_get(nodes[2], "taken")
        append("meanwhile", 80, 100, 2000)  # 40 entries a group: newer snapshots, every 16
        wait_for("the leaders to take newer snapshots",
                 lambda: cs_get(nodes[1], "taken") + cs_get(nodes[2], "taken") >= taken + 2, 30)

        # 4. The links move again: libraft sends the newer snapshots, the transfers resume.
        for p in outbound.values():
            p.restore()
        cluster.wait_caught_up(3, timeout=120)
        s3 = transfers(nodes[3])
        skipped = cs_get(nodes[1], "chunk_bytes_skipped") + cs_get(nodes[2], "chunk_bytes_skipped")
        # A transfer resumes only from the sender it was cut from (docs/replication.md, "What a cluster
        # does not do yet, and why"): when a group's leader changed meanwhile (an election on a loaded
        # machine), its newer snapshot comes from another node and is sent whole.
        moved = {g: (was, leaders(nodes[1]).get(g)) for g, was in leaders_at_cut.items()
                 if leaders(nodes[1]).get(g) != was}
        if moved:
            print("leaders changed between the cut and the restore (group: before, after): %r; a resume is "
                  "not expected there" % moved)
        else:
            check(s3["transfers_resumed"] > 0, "node 3 resumed a cut transfer: %r" % s3)
            check(skipped > 0, "the leaders skipped records node 3 held (%d bytes)" % skipped)
        check(s3["transfers_completed"] > 0 and s3["restored"] > 0, "node 3 installed the snapshots: %r" % s3)
        for i in (1, 2, 3):
            bad = [p for p, want in sorted(expected.items()) if cs.read_stream(nodes[i], p)[0] != want]
            check(not bad, "node %d reads every stream as written (differs: %s)" % (i, bad[:5]))
        print("node 3: %r; the leaders skipped %d bytes" % (s3, skipped))
        ok = True
    except Exception as e:  # a broken cluster shows in the logs
        error = e
    finally:
        for p in (inbound, *outbound.values()):
            p.close()
    return cs.conclude("cluster_snapshot_resume", cluster, ok, t0, error)


if __name__ == "__main__":
    sys.exit(main())

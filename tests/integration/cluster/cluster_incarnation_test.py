"""A node that lost its data directory and comes back under its id is refused; removed and added again,
it is accepted (label: integration; docs/replication.md, "A node that lost its data directory";
docs/operations.md, "A node that lost its data directory").

  1. three nodes start on empty directories (every node new: each records the others' incarnations in
     <data-dir>/incarnations) and take a write;
  2. node 3 is killed and started under id 3 on an empty directory, first as it was (its --peers, no
     --join), then with --join without having been removed: each time nodes 1 and 2 refuse its links and
     log why (an error naming node 3 and the way back), and node 3 reads their refusal, logs it and
     exits with status 1: it served nothing. Nodes 1 and 2 still take writes and reads;
  3. node 3 is removed (DELETE /cluster/members?id=3 on node 1; nodes 1 and 2 forget its incarnation),
     started on an empty directory with --join and added (POST /cluster/members): it is accepted, catches
     up (reads every write) and takes writes that the others read.

Usage: cluster_incarnation_test.py WEIR_BINARY
"""
import os
import shutil
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_support as cs  # noqa: E402
from cluster_support import HOST, check, failures  # noqa: E402

GROUPS = 8
PATH = "/v1/stream/incarnation"
OCTET = {"Content-Type": "application/octet-stream"}


def remembered(node):
    """The ids in `node`'s incarnation book (<data-dir>/incarnations), or None without one."""
    path = os.path.join(node.data_dir, "incarnations")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return sorted(int(line.split("=")[0].strip()[len("node-"):]) for line in f
                      if line.startswith("node-"))


def voters_everywhere(node, want):
    st = node.status()
    return (st is not None and
            all(g["voters"] == want and g["non_voters"] == [] and g["leader"] in want
                for g in st["raft_groups"]) and st)


def append(node, body):
    st, _, resp = cs.request(node.port, "POST", PATH, body=body, headers=OCTET)
    check(st in (200, 204), "append %r through node %d: %d %r" % (body, node.id, st, resp[:200]))


def reads(nodes, want, when):
    for n in nodes:
        data, _ = cs.read_stream(n, PATH)
        check(data == want, "%s: node %d reads %r, wrote %r" % (when, n.id, data, want))


def refused_and_exits(cluster, n3, extra, when):
    """Node 3, started on an empty directory with `extra`, is refused by its peers and exits."""
    shutil.rmtree(n3.data_dir, ignore_errors=True)
    n3.start(wait=False, extra=extra)
    n3.stopping = True  # it is to exit on its own
    try:
        rc = n3.proc.wait(timeout=30)
    except Exception:  # noqa: BLE001: still running: the check below fails, conclude kills it
        rc = None
    check(rc == 1, "%s: node 3 exits with status 1 once refused, got %s" % (when, rc))
    log = n3.logs()[-1][1]
    check("refuses this node's peer links" in log and "DELETE /cluster/members?id=3" in log,
          "%s: node 3 logs why it stops:\n%s" % (when, n3.log_tail()))
    lines = cluster.grep_logs(r"node [12]: refusing the connection from .*node 3 came back with a different "
                              r"data directory.*DELETE /cluster/members\?id=3")
    check(lines, "%s: node 1 or 2 logs an error naming node 3" % when)
    print("%s: node 3 exited with %s; %d refusals logged" % (when, rc, len(lines)), flush=True)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    t0 = time.monotonic()
    cluster = cs.Cluster(sys.argv[1], extra=["--threads", "1", "--raft-groups", str(GROUPS)],
                         prefix="weir-cluster-incarnation-")
    n1, n2, n3 = (cluster.node(i) for i in (1, 2, 3))
    ok = False
    error = None
    try:
        cluster.start()
        cluster.wait_healthy()
        st, _, body = cs.request(n1.port, "PUT", PATH, headers=OCTET)
        check(st == 201, "create %s: %d %r" % (PATH, st, body))
        append(n1, b"one.")
        for n in (n1, n2):
            cs.wait_for("node %d to remember node 3's incarnation" % n.id,
                        lambda n=n: 3 in (remembered(n) or []), 20)

        n3.kill()
        refused_and_exits(cluster, n3, [], "started again as it was")
        append(n2, b"two.")
        reads([n1, n2], b"one.two.", "with node 3 refused")
        refused_and_exits(cluster, n3, ["--join"], "started again with --join, not removed")
        append(n1, b"three.")
        reads([n1, n2], b"one.two.three.", "with node 3 refused twice")

        st, _, body = cs.request(n1.port, "DELETE", "/cluster/members?id=3")
        check(st == 202, "DELETE /cluster/members?id=3: 202, got %d %r" % (st, body))
        for n in (n1, n2):
            cs.wait_for("node %d: every group with voters [1, 2]" % n.id, lambda n=n: voters_everywhere(n, [1, 2]),
                        30)
            cs.wait_for("node %d to forget node 3's incarnation" % n.id,
                        lambda n=n: 3 not in (remembered(n) or []), 20)

        shutil.rmtree(n3.data_dir, ignore_errors=True)
        n3.start(extra=["--join"])
        st, _, body = cs.request(n1.port, "POST",
                                 "/cluster/members?id=3&address=%s:%d" % (HOST, cluster.peer_ports[3]))
        check(st == 202, "POST /cluster/members?id=3: 202, got %d %r" % (st, body))
        for n in (n1, n2, n3):
            cs.wait_for("node %d: every group with voters [1, 2, 3]" % n.id,
                        lambda n=n: voters_everywhere(n, [1, 2, 3]), 30)
        cluster.wait_caught_up(3)
        reads([n3], b"one.two.three.", "node 3 added again")
        append(n3, b"four.")
        reads([n1, n2, n3], b"one.two.three.four.", "after a write through node 3")
        for n in (n1, n2):
            check(3 in (remembered(n) or []), "node %d remembers node 3's new incarnation" % n.id)
        check(n3.alive(), "node 3 runs")
        exits = cluster.unexpected_exits()
        check(not exits, "no node exited on its own: %s" % exits)
        ok = not failures
    except Exception as e:  # noqa: BLE001: any failure is reported with the logs
        error = e
    finally:
        rc = cs.conclude("cluster_incarnation", cluster, ok, t0, error)
    return rc


if __name__ == "__main__":
    sys.exit(main())

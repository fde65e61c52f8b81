"""A node of a 3-node cluster with a cold tier replaced by an empty one (label: integration;
docs/cold-tier.md, "A cluster"; docs/operations.md, "Replace a dead node").

With small segments, objects and budget against s3rver (the settings of cluster_cold_test.py):
  1. about four times the budget is written through all three nodes (byte streams and a JSON stream);
     every node drops bytes that are in objects, and every stream reads back whole from every node;
  2. node 3 dies with its disk (SIGKILL, its data directory removed) and is removed from the cluster
     (DELETE /cluster/members?id=3 on node 1): every group ends with voters {1,2};
  3. node 4 starts on an empty data directory with --join and is added (POST /cluster/members?id=4):
     every group ends with voters {1,2,4}, and node 4 applies what the others committed. It got the
     groups' snapshots (object references and the records the leaders still held, not the bytes in the
     bucket), so its stream data on disk (data log and kept node-log segments) stays within the budget plus a few segments;
  4. every stream reads back whole from node 4, the bytes only in the bucket included (node 4 counts
     reads from the bucket); node 4 takes the lead of a group with a stream and uploads its bytes;
     appends through node 4 read back from every node.

Usage: cluster_cold_replace_test.py WEIR_BINARY NODE_DIR S3RVER_SCRIPT
"""
import os
import shutil
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_support as cs  # noqa: E402
from cluster_support import HOST, check, failures  # noqa: E402
import cluster_cold_test as cold  # noqa: E402

GROUPS = 8


def voters_everywhere(node, want):
    """Every group of `node`'s view has exactly the voters `want`, no other server, and a leader."""
    st = node.status()
    return (st is not None and
            all(g["voters"] == want and g["non_voters"] == [] and g["leader"] in want
                for g in st["raft_groups"]) and st)


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    t0 = time.monotonic()
    s3 = cold.S3rver(sys.argv[2], sys.argv[3])
    os.environ["AWS_ACCESS_KEY_ID"] = "S3RVER"
    os.environ["AWS_SECRET_ACCESS_KEY"] = "S3RVER"
    settings = ["--threads", "1", "--raft-groups", str(GROUPS), "--raft-snapshot-entries", "16",
                "--raft-snapshot-bytes", str(cold.RAFT_SNAPSHOT_BYTES),
                "--raft-snapshot-trailing", "4", "--hot-bytes", "65536",
                "--segment-bytes", str(cold.SEGMENT_BYTES), "--raft-segment-bytes", str(cold.SEGMENT_BYTES),
                "--cold", "s3://%s/c" % cold.BUCKET,
                "--s3-endpoint", "http://127.0.0.1:%d" % s3.port, "--cold-object-bytes", str(cold.OBJECT_BYTES),
                "--cold-max-age-ms", "200", "--local-bytes", str(cold.LOCAL_BYTES), "--cold-gc-grace-ms", "1000",
                "--cold-snapshot-interval-ms", "500"]
    cluster = cs.Cluster(sys.argv[1], extra=settings, size=4, prefix="weir-cluster-cold-replace-")
    ports = cluster.peer_ports
    three = ",".join("%d=%s:%d" % (i, HOST, ports[i]) for i in (1, 2, 3))
    for n in cluster.nodes.values():
        # Node 4 lists the cluster it joins, itself included (docs/operations.md, "Add a node").
        n.peers_arg = ",".join("%d=%s:%d" % (i, HOST, ports[i]) for i in (1, 2, 4)) if n.id == 4 else three
    ok = False
    error = None
    try:
        cluster.start([1, 2, 3])
        cluster.wait_healthy([1, 2, 3])
        n1, n2, n3, n4 = (cluster.node(i) for i in (1, 2, 3, 4))
        # cold-d is in group 2, which the leaders hand to node 4 once it is a voter (the g-th voter of
        # [1, 2, 4] leads group g: docs/replication.md, "Leaders are spread").
        expected = {"/v1/stream/cold-a": b"", "/v1/stream/cold-b": b"", "/v1/stream/cold-c": b"",
                    "/v1/stream/cold-d": b"", "/v1/stream/cold-json": []}
        for path in expected:
            st, _, _ = cold.req(n1, "PUT", path, headers=cold.JSON if path.endswith("json") else cold.OCTET)
            check(st == 201, "create %s: %d" % (path, st))

        # 1. Three times the budget, through every node, uploaded and dropped everywhere.
        cold.write_round(cluster, expected, 64, "one")
        first = [n1, n2, n3]

        def dropped():
            ms = [cold.metrics(n) for n in first]
            return (all(m is not None and m.get("weir_tier_dropped_bytes_total", 0) > 0 for m in ms) and ms)

        ms = cs.wait_for("every node to drop bytes that are in objects", dropped, 60)
        for n, m in zip(first, ms):
            print("node %d: %d objects uploaded, %d bytes dropped, %d held" %
                  (n.id, m.get("weir_tier_objects_uploaded_total", 0), m.get("weir_tier_dropped_bytes_total", 0),
                   m.get("weir_tier_held_bytes", 0)), flush=True)
        cold.check_reads(first, expected, "after the first writes")

        # 2. Node 3 dies with its disk and is removed.
        n3.kill()
        shutil.rmtree(n3.data_dir)
        st, _, body = cold.req(n1, "DELETE", "/cluster/members?id=3")
        check(st == 202, "DELETE /cluster/members?id=3: 202, got %d %r" % (st, body))
        for n in (n1, n2):
            cs.wait_for("node %d: every group with voters [1, 2]" % n.id,
                        lambda n=n: voters_everywhere(n, [1, 2]), 60)
        cold.write_round(cluster, expected, 8, "two")

        # 3. An empty node 4 joins and catches up from the groups' snapshots.
        n4.start(extra=["--join"])
        st, _, body = cold.req(n1, "POST", "/cluster/members?id=4&address=%s:%d" % (HOST, ports[4]))
        check(st == 202, "POST /cluster/members?id=4: 202, got %d %r" % (st, body))
        for n in (n1, n2, n4):
            cs.wait_for("node %d: every group with voters [1, 2, 4]" % n.id,
                        lambda n=n: voters_everywhere(n, [1, 2, 4]), 60)
        cluster.wait_caught_up(4, timeout=60)
        snaps = cs.summed(n4.status(), "snapshots")
        print("node 4: snapshots %s, data log and kept node-log segments %d bytes" % (snaps, cold.data_log_bytes(n4)), flush=True)
        check(snaps["restored"] > 0, "node 4 caught up from snapshots: %r" % snaps)
        try:
            cs.wait_for("node 4's stream data on disk within the budget plus a few segments",
                        lambda: cold.data_log_bytes(n4) <= cold.DISK_BOUND, 30)
        except TimeoutError:
            check(False, "node 4's stream data on disk is %d bytes, over the budget plus a few segments" %
                  cold.data_log_bytes(n4))

        # 4. Every byte from node 4, some of them from the bucket; then writes through it.
        cold.check_reads([n4], expected, "from the new node")
        m4 = cold.metrics(n4) or {}
        check(m4.get("weir_tier_bucket_reads_total", 0) > 0, "node 4 read nothing from the bucket")
        check(m4.get("weir_tier_bucket_read_failures_total", 0) == 0,
              "node 4 failed %d reads from the bucket" % m4.get("weir_tier_bucket_read_failures_total", 0))
        # Node 4 leads a group with a stream and uploads its bytes.
        group = cs.fnv_group("/v1/stream/cold-d", GROUPS)
        cs.wait_for("node 4 to lead group %d" % group,
                    lambda: (n4.status() or {"raft_groups": [{}] * GROUPS})["raft_groups"][group].get("leader") == 4,
                    60)
        cold.write_round(cluster, expected, 16, "three")
        uploaded = cs.wait_for("node 4 to upload objects",
                               lambda: (cold.metrics(n4) or {}).get("weir_tier_objects_uploaded_total", 0), 30)
        print("node 4 leads group %d and uploaded %d objects" % (group, uploaded), flush=True)
        cold.check_reads([n1, n2, n4], expected, "after writes through the new node")
        st, _, body = cold.req(n4, "GET", "/healthz")
        check(st == 200, "node 4 /healthz: %d %r" % (st, body))
        exits = cluster.unexpected_exits()
        check(not exits, "no node exited on its own: %s" % exits)
        ok = not failures
    except Exception as e:  # noqa: BLE001: any failure is reported with the logs
        error = e
    finally:
        rc = cs.conclude("cluster_cold_replace", cluster, ok, t0, error)
        s3.stop()
    return rc


if __name__ == "__main__":
    sys.exit(main())

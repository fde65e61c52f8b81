"""The official Durable Streams conformance suite (subscriptions on) over h2c (HTTP/2 with prior
knowledge) against a follower of every group of a 3-node cluster: each write the suite makes over
HTTP/2 is forwarded to its group's leader, each read waits for a read index. Nodes 1 and 3 start
first and elect every leader; node 2 starts last (--balance-leaders false) and takes the suite. At the
end the nodes stop on SIGTERM with status 0.

Usage: run-conformance-h2-cluster.py WEIR_BINARY TESTS_NODE_DIR [extra serve flags...]
"""
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cluster"))
import cluster_support as cs  # noqa: E402


def main():
    weir, node_dir = sys.argv[1], sys.argv[2]
    extra = ["--long-poll-timeout-ms", "500", "--allow-loopback-webhooks", "true", "--threads", "2",
             "--balance-leaders", "false", *sys.argv[3:]]
    cluster = cs.Cluster(weir, extra, prefix="weir-conformance-h2-cluster-")
    ok = False
    try:
        cluster.start([1, 3])
        cluster.wait_all_leaders(via=1, timeout=30)
        cluster.start([2])

        def follower_everywhere():
            st = cluster.node(2).status()
            return st is not None and st["quorum"] and st["groups_led"] == 0 and \
                all(g["leader"] in (1, 3) for g in st["raft_groups"])

        cs.wait_for("node 2 to have a quorum and lead no group", follower_everywhere, 30)
        env = dict(os.environ, WEIR_H2="h2c", CONFORMANCE_TEST_URL=cluster.node(2).url,
                   CONFORMANCE_SUBSCRIPTIONS="1", CONFORMANCE_LONG_POLL_MS="500")
        t1 = time.monotonic()
        suite = subprocess.call(["npx", "vitest", "run", "--config", "vitest.conformance.h2.config.mjs",
                                 "--reporter=dot"], cwd=node_dir, env=env)
        print("conformance over h2c against node 2: status %d in %.0f s" % (suite, time.monotonic() - t1),
              flush=True)
        dead = cluster.unexpected_exits()
        codes = cluster.stop_all()
        bad_stop = {i: c for i, c in codes.items() if c != 0}
        for line in dead:
            print("FAIL: a node exited on its own during the run: %s" % line)
        if bad_stop:
            print("FAIL: node(s) did not stop cleanly on SIGTERM (status, None = killed): %s" % bad_stop)
        if suite != 0:
            print("FAIL: the conformance suite over h2c failed against node 2 (status %d)" % suite)
        ok = suite == 0 and not dead and not bad_stop
    finally:
        cluster.kill_all()
        if not ok:
            cluster.dump_logs()
        cluster.remove()
    if not ok:
        return 1
    print("conformance_h2c_cluster: all tests passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

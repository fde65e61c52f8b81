"""The official Durable Streams conformance suite (subscriptions on) against a follower of every group
of a 3-node cluster, and the official TypeScript client's test against another node.

Nodes 1 and 3 start first and elect a leader for every group between them; node 2 starts next (with
--balance-leaders false no leadership is handed to it) and, once it has a quorum and leads no group,
takes every request of the suite: each write is forwarded to
its group's leader over the peer link and each read waits for a read index. The client test
(tests/node/client.test.mjs) then runs against node 3. At the end the nodes stop on SIGTERM with
status 0.

With --h2c the suite speaks HTTP/2 with prior knowledge to node 2 (tests/node/h2_dispatcher.mjs: every
connection it opens must be HTTP/2) and the client test is left out.

Usage: run-conformance-cluster.py [--h2c] WEIR_BINARY TESTS_NODE_DIR [extra serve flags...]
"""
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_support as cs  # noqa: E402


def main():
    args = sys.argv[1:]
    h2c = bool(args) and args[0] == "--h2c"
    if h2c:
        args = args[1:]
    weir, node_dir = args[0], args[1]
    name = "conformance_h2c_cluster" if h2c else "conformance_cluster"
    over = " over h2c" if h2c else ""
    # Leaders stay where the elections put them: node 2 must remain a follower of every group.
    extra = ["--long-poll-timeout-ms", "500", "--allow-loopback-webhooks", "true", "--threads", "2",
             "--balance-leaders", "false", *args[2:]]
    cluster = cs.Cluster(weir, extra, prefix="weir-%s-" % name.replace("_", "-"))
    ok = False
    try:
        t0 = time.monotonic()
        cluster.start([1, 3])
        cluster.wait_all_leaders(via=1, timeout=30)
        cluster.start([2])

        def follower_everywhere():
            st = cluster.node(2).status()
            return st is not None and st["quorum"] and st["groups_led"] == 0 and \
                all(g["leader"] in (1, 3) for g in st["raft_groups"])

        cs.wait_for("node 2 to have a quorum and lead no group", follower_everywhere, 30)
        print("cluster ready in %.1f s: node 1 %s, node 2 %s (follower of every group), node 3 %s"
              % (time.monotonic() - t0, cluster.node(1).url, cluster.node(2).url, cluster.node(3).url),
              flush=True)

        env = dict(os.environ, CONFORMANCE_TEST_URL=cluster.node(2).url, CONFORMANCE_SUBSCRIPTIONS="1",
                   CONFORMANCE_LONG_POLL_MS="500")
        config = "vitest.conformance.config.mjs"
        if h2c:
            env["WEIR_H2"] = "h2c"
            config = "vitest.conformance.h2.config.mjs"
        t1 = time.monotonic()
        suite = subprocess.call(["npx", "vitest", "run", "--config", config, "--reporter=dot"], cwd=node_dir,
                                env=env)
        print("conformance%s against node 2: status %d in %.0f s" % (over, suite, time.monotonic() - t1),
              flush=True)

        st = cluster.node(2).status()
        led = st["groups_led"] if st else "?"
        print("node 2 led %s groups at the end of the suite" % led, flush=True)

        client = 0
        if not h2c:
            env = dict(os.environ, WEIR_URL=cluster.node(3).url)
            t2 = time.monotonic()
            client = subprocess.call(["npx", "vitest", "run", "--config", "vitest.client.config.mjs"],
                                     cwd=node_dir, env=env)
            print("client test against node 3: status %d in %.0f s" % (client, time.monotonic() - t2),
                  flush=True)

        # Every write the clients made is answered: no node keeps bytes counted as in flight (a waiter
        # never finished would hold writes back for admission for good, raft-proposal-bytes).
        def nothing_in_flight():
            sts = [cluster.node(i).status() for i in (1, 2, 3)]
            return all(s is not None and cs.summed(s, "admission")["in_flight_bytes"] == 0 and
                       cs.summed(s, "admission")["waiting"] == 0 for s in sts)

        drained = True
        try:
            cs.wait_for("every node to have nothing in flight", nothing_in_flight, 15)
        except Exception as e:  # noqa: BLE001 - reported with the nodes' views below
            drained = False
            print("FAIL: %s: %s" % (e, [(i, (cluster.node(i).status() or {}).get("admission"))
                                        for i in (1, 2, 3)]))

        dead = cluster.unexpected_exits()
        codes = cluster.stop_all()
        bad_stop = {i: c for i, c in codes.items() if c != 0}
        for line in dead:
            print("FAIL: a node exited on its own during the run: %s" % line)
        if bad_stop:
            print("FAIL: node(s) did not stop cleanly on SIGTERM (status, None = killed): %s" % bad_stop)
        if suite != 0:
            print("FAIL: the conformance suite%s failed against node 2 (status %d)" % (over, suite))
        if client != 0:
            print("FAIL: the client test failed against node 3 (status %d)" % client)
        ok = suite == 0 and client == 0 and drained and not dead and not bad_stop
    finally:
        cluster.kill_all()
        if not ok:
            cluster.dump_logs()
        cluster.remove()
    if not ok:
        return 1
    print("%s: all tests passed" % name)
    return 0


if __name__ == "__main__":
    sys.exit(main())

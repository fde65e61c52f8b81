"""Membership changes of a running cluster (docs/operations.md, "Cluster"), with real `weir serve`
processes on 127.0.0.1:

  1. nodes 1-3 start and take writes;
  2. node 4 starts empty with --join (it bootstraps nothing: no group has a voter in its view, and a
     change posted to it is refused with 409); POST /cluster/members?id=4 on node 1 adds it; every group
     ends up with voters {1,2,3,4}, node 4 applies what the others committed, and reads everything;
  3. DELETE /cluster/members?id=3 on node 2 removes node 3 while it runs (the groups it leads are handed
     over first); every group ends up with voters {1,2,4}; node 3 is stopped; writes go on and node 4
     reads everything;
  4. node 4 restarts without --join: its members file brings it back with the same membership;
  5. two changes sent at the same moment to two different nodes (node 3 added back, a node 5 that never
     starts added): group 0 decides them one after the other, so each client gets either 202 with a
     membership that the final one (the same on every node) reflects, or 409 (another change came
     first); the epoch counts exactly the 202s. Writes go on;
  6. node 4 is stopped, removed (DELETE on node 1) and started again: the others refuse its links, but
     tell it the decision, so it reports that it left (`"left"`, /healthz 503 "removed from the cluster").

Bad requests get 400. Every wait polls /cluster with a deadline (a child process offers no event to wait
on). Processes are stopped by PID, on failure too. The binary is copied first: the build tree's may be
relinked while the test runs.

Usage: cluster_membership_test.py WEIR_BINARY   (WEIR_KEEP_TEST_DIR=1 keeps the logs of a run that passed)
"""
import json
import os
import shutil
import sys
import threading
import time
import urllib.parse

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cluster"))
import cluster_support as cs  # noqa: E402
from cluster_support import HOST, check, failures, request, wait_for  # noqa: E402

GROUPS = 8
STREAMS = 24
TEXT = {"Content-Type": "text/plain"}



def voters_everywhere(node, want):
    """Every group of `node`'s view has exactly the voters `want`, no other server, and a leader."""
    st = node.status()
    return (st is not None and
            all(g["voters"] == want and g["non_voters"] == [] and g["leader"] in want
                for g in st["raft_groups"]) and st)


def read_all(node, path):
    data, offset = b"", "-1"
    for _ in range(10000):
        st, hdrs, body = request(node.port, "GET", "%s?offset=%s" % (path, urllib.parse.quote(offset)))
        if st != 200:
            raise RuntimeError("GET %s on node %d: %d %r" % (path, node.id, st, body[:200]))
        data += body
        if hdrs.get("stream-up-to-date") == "true":
            return data
        offset = hdrs["stream-next-offset"]
    raise RuntimeError("GET %s never reached the tail" % path)


class Writer:
    """Appends through a rotation of nodes; `expected` holds what every stream must read back."""

    def __init__(self):
        self.expected = {}
        self.n = 0

    def create(self, node, path):
        st, _, body = request(node.port, "PUT", path, headers=TEXT)
        check(st == 201, "PUT %s on node %d: %d %r" % (path, node.id, st, body[:200]))
        self.expected[path] = b""

    def append_round(self, nodes, tag):
        for i, path in enumerate(sorted(self.expected)):
            node = nodes[i % len(nodes)]
            rec = b"%s.%d;" % (tag.encode(), self.n)
            self.n += 1
            st, _, body = request(node.port, "POST", path, body=rec, headers=TEXT)
            if check(st in (200, 204), "POST %s on node %d: %d %r" % (path, node.id, st, body[:200])):
                self.expected[path] += rec

    def verify(self, node, when):
        bad = [p for p, want in sorted(self.expected.items()) if read_all(node, p) != want]
        check(not bad, "%s: node %d reads every stream as written (differs: %s)" % (when, node.id, bad[:5]))


def main():
    cluster = cs.Cluster(sys.argv[1], extra=["--threads", "1", "--raft-groups", str(GROUPS)], size=4,
                         prefix="weir-membership-")
    workdir = cluster.workdir
    cluster.weir = os.path.join(workdir, "weir")
    shutil.copy2(sys.argv[1], cluster.weir)
    ports = cluster.peer_ports
    nodes = cluster.nodes
    three = ",".join("%d=%s:%d" % (i, HOST, ports[i]) for i in (1, 2, 3))
    four = ",".join("%d=%s:%d" % (i, HOST, ports[i]) for i in (1, 2, 3, 4))
    for n in nodes.values():
        n.peers_arg = four if n.id == 4 else three
    ok = False
    began = time.monotonic()
    try:
        # 1. Three nodes, some data.
        cluster.start([1, 2, 3])
        for i in (1, 2, 3):
            wait_for("node %d to see voters 1-3 with leaders" % i,
                     lambda i=i: voters_everywhere(nodes[i], [1, 2, 3]), 30)
        w = Writer()
        for k in range(STREAMS):
            w.create(nodes[1 + k % 3], "/v1/stream/m-%d" % k)
        w.append_round([nodes[1], nodes[2], nodes[3]], "a")
        st = nodes[1].status()
        check(st["membership"]["epoch"] == 0, "no membership change asked for yet: %r" % st["membership"])

        # 2. Node 4 joins.
        n4 = nodes[4]
        n4.start(extra=["--join"])
        st = n4.status()
        check(all(g["voters"] == [] and g["leader"] == 0 for g in st["raft_groups"]),
              "a joining node bootstraps nothing: %r" % st["raft_groups"][:2])
        code, _, body = request(n4.port, "POST", "/cluster/members?id=5&address=127.0.0.1:1")
        check(code == 409, "a change posted to a node that has not joined: 409, got %d %r" % (code, body))
        for bad in ("/cluster/members?id=4", "/cluster/members?id=0&address=127.0.0.1:9",
                    "/cluster/members?id=4&address=nowhere", "/cluster/members?id=4&address=127.0.0.1:%d" % ports[1],
                    "/cluster/members?id=4&address=127.0.0.1:9&x=1"):
            code, _, body = request(nodes[1].port, "POST", bad)
            check(code == 400, "POST %s: 400, got %d %r" % (bad, code, body))
        code, _, body = request(nodes[1].port, "DELETE", "/cluster/members?id=9")
        check(code == 400, "DELETE of a node that is not a member: 400, got %d %r" % (code, body))
        code, hdrs, body = request(nodes[1].port, "PUT", "/cluster/members")
        check(code == 405 and "POST" in hdrs.get("allow", ""), "PUT /cluster/members: 405, got %d" % code)

        code, _, body = request(nodes[1].port, "POST", "/cluster/members?id=4&address=127.0.0.1:%d" % ports[4])
        check(code == 202, "POST /cluster/members?id=4: 202, got %d %r" % (code, body))
        m = json.loads(body) if code == 202 else {}
        check(m.get("epoch") == 1 and [x["node_id"] for x in m.get("members", [])] == [1, 2, 3, 4],
              "the answer is the desired membership: %r" % m)
        w.append_round([nodes[1], nodes[2], nodes[3]], "b")  # writes go on during the change
        t = time.monotonic()
        for i in (1, 2, 3, 4):
            wait_for("node %d to see voters 1-4 in every group" % i,
                     lambda i=i: voters_everywhere(nodes[i], [1, 2, 3, 4]), 60)
        print("node 4 is a voter of every group after %.1f s" % (time.monotonic() - t), flush=True)
        cluster.wait_caught_up(4)
        w.verify(n4, "after the join")
        st = n4.status()
        check(st["membership"]["epoch"] == 1, "node 4 learnt the membership: %r" % st["membership"])
        w.append_round([n4, nodes[1]], "c")
        w.verify(nodes[3], "after the join")

        # 3. Node 3 leaves (removed while it runs, then stopped).
        code, _, body = request(nodes[2].port, "DELETE", "/cluster/members?id=3")
        check(code == 202, "DELETE /cluster/members?id=3: 202, got %d %r" % (code, body))
        m = json.loads(body) if code == 202 else {}
        check(m.get("epoch") == 2 and [x["node_id"] for x in m.get("members", [])] == [1, 2, 4],
              "the answer is the desired membership: %r" % m)
        t = time.monotonic()
        for i in (1, 2, 4):
            wait_for("node %d to see voters 1, 2, 4 in every group" % i,
                     lambda i=i: voters_everywhere(nodes[i], [1, 2, 4]), 60)
        print("node 3 left every group after %.1f s" % (time.monotonic() - t), flush=True)
        # Node 3 knows it left: it takes no request (its replicas stop where it left).
        wait_for("node 3 to report that it left", lambda: (nodes[3].status() or {}).get("left") is True, 15)
        code, _, body = request(nodes[3].port, "GET", "/healthz")
        check(code == 503 and b"removed" in body, "node 3's /healthz: %d %r" % (code, body))
        code, _, body = request(nodes[3].port, "GET", sorted(w.expected)[0] + "?offset=-1")
        check(code == 503 and b"no longer a member" in body, "a read on node 3: %d %r" % (code, body))
        nodes[3].stop()
        w.append_round([nodes[1], nodes[2], n4], "d")
        for i in (1, 2, 4):
            wait_for("node %d to unlink node 3" % i,
                     lambda i=i: all(p["node_id"] != 3 for v in cs.lane_views(nodes[i].status() or {"peers": [{"node_id": 3}]})
                                    for p in v["peers"]),
                     15)
        w.verify(n4, "after the removal")
        for i in (1, 2, 4):
            st = nodes[i].status()
            check(st["quorum"], "node %d has a quorum without node 3" % i)
        with open(os.path.join(n4.data_dir, "raft", "members")) as f:
            text = f.read()
        check("epoch = 2" in text and "members = 1=127.0.0.1:%d,2=127.0.0.1:%d,4=127.0.0.1:%d" % (
            ports[1], ports[2], ports[4]) in text, "node 4's members file: %r" % text)

        # 4. Node 4 restarts without --join: its members file keeps it from bootstrapping.
        n4.stop()
        n4.start()
        wait_for("node 4 back with voters 1, 2, 4", lambda: voters_everywhere(n4, [1, 2, 4]), 30)
        w.append_round([nodes[1], n4], "e")
        cluster.wait_caught_up(4)  # from nodes 1 and 2: node 3 is stopped
        w.verify(n4, "after node 4's restart")
        w.verify(nodes[1], "at the end")

        # 5. Two changes at once, through two nodes.
        _, _, body = request(nodes[1].port, "GET", "/cluster/members")
        before = json.loads(body)
        port5 = cs.free_port()
        changes = [(nodes[1], "/cluster/members?id=3&address=127.0.0.1:%d" % ports[3], 3),
                   (nodes[2], "/cluster/members?id=5&address=127.0.0.1:%d" % port5, 5)]
        answers = {}
        go = threading.Barrier(len(changes))

        def change(k, node, path):
            go.wait()
            answers[k] = request(node.port, "POST", path)

        threads = [threading.Thread(target=change, args=(k, n, p)) for k, (n, p, _) in enumerate(changes)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        successes = []
        for k, (node, path, added) in enumerate(changes):
            code, _, body = answers[k]
            print("POST %s on node %d at once: %d %s" % (path, node.id, code, body.decode()[:200]), flush=True)
            check(code in (202, 409), "a change made at once with another: 202 or 409, got %d %r" % (code, body))
            if code == 202:
                m = json.loads(body)
                check(added in [x["node_id"] for x in m["members"]], "the answer holds node %d: %r" % (added, m))
                successes.append((added, m["epoch"]))
            elif code == 409:
                check(b"another membership change came first" in body, "the 409 says why: %r" % body)
        check(len(successes) >= 1, "at least one of two valid changes is made")
        check(sorted(e for _, e in successes) == list(range(before["epoch"] + 1, before["epoch"] + 1 + len(successes))),
              "one epoch per success, after %d: %r" % (before["epoch"], successes))

        def settled():
            views = []
            for i in (1, 2, 4):
                code, _, body = request(nodes[i].port, "GET", "/cluster/members")
                if code != 200:
                    return False
                views.append(json.loads(body))
            return all(v == views[0] for v in views) and views[0]["epoch"] == before["epoch"] + len(successes) and views[0]
        final = wait_for("nodes 1, 2 and 4 to agree on the membership", settled, 30)
        got = [x["node_id"] for x in final["members"]]
        for added, _ in successes:
            check(added in got, "the final membership reflects the success that added node %d: %r" % (added, got))
        w.append_round([nodes[1], nodes[2], n4], "f")  # the voters are still 1, 2 and 4
        w.verify(n4, "after the changes at once")

        # 6. Node 4 is removed while it is stopped; started again, it is in no configuration and the
        # others refuse its links, but the one it knocks at tells it the decision: it knows it left.
        n4.stop()
        code, _, body = request(nodes[1].port, "DELETE", "/cluster/members?id=4")
        check(code == 202, "DELETE /cluster/members?id=4 while node 4 is down: 202, got %d %r" % (code, body))
        def without_4(node):  # the node added in 5 never started: it may stay a non-voter
            st = node.status()
            return st is not None and all(g["voters"] == [1, 2] and 4 not in g["non_voters"] and g["leader"] in (1, 2)
                                          for g in st["raft_groups"])
        for i in (1, 2):
            wait_for("node %d to see voters 1, 2 in every group" % i, lambda i=i: without_4(nodes[i]), 60)
            wait_for("node %d to unlink node 4" % i,
                     lambda i=i: all(p["node_id"] != 4 for v in cs.lane_views(nodes[i].status() or {"peers": [{"node_id": 4}]})
                                    for p in v["peers"]),
                     15)
        n4.start()
        t = time.monotonic()
        wait_for("node 4, removed while down, to report that it left",
                 lambda: (n4.status() or {}).get("left") is True, 30)
        print("node 4 knew it left %.1f s after its start" % (time.monotonic() - t), flush=True)
        code, _, body = request(n4.port, "GET", "/healthz")
        check(code == 503 and b"removed" in body, "node 4's /healthz: %d %r" % (code, body))
        ok = not failures
    except Exception as e:  # noqa: BLE001 -- reported with the nodes' logs below
        failures.append("%s: %s" % (type(e).__name__, e))
        print("FAIL:", failures[-1], flush=True)
    finally:
        cluster.stop_all()
        if not ok:
            for n in nodes.values():
                print("---- node %d (%s) ----\n%s" % (n.id, n.log_path, n.log_tail(40)), flush=True)
    print("%s in %.1f s" % ("passed" if ok else "%d failures" % len(failures), time.monotonic() - began))
    if ok and not os.environ.get("WEIR_KEEP_TEST_DIR"):
        cluster.remove()
    if not ok or os.environ.get("WEIR_KEEP_TEST_DIR"):
        print("logs and data kept in", workdir)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Subscriptions in a 3-node cluster of real `weir serve` processes on 127.0.0.1 (docs/subscriptions.md,
"Cluster"): a webhook subscription created through node 1 is read back from nodes 2 and 3; an append
through node 3 wakes it exactly once (one node, the leader of the subscription's raft group, delivers);
after that leader is killed (SIGKILL), an append through a surviving node still wakes it, delivered by
the new leader (signed with that node's key, which every node's JWKS lists). The killed node then
restarts (its replica comes back from its node log) and one more append is still delivered exactly once.

Usage: cluster_subscriptions_test.py WEIR_BINARY

Waits poll a node's state or the receiver's with a deadline: child processes offer no event to wait on.
Every node is stopped by PID at the end, also when a check fails.
"""
import http.client
import http.server
import json
import os
import re
import sys
import threading

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cluster"))
import cluster_support as cs  # noqa: E402
from cluster_support import HOST, request, wait_for  # noqa: E402

ROOT = "/v1/stream/"
SUB_ID = "sub-cluster"


def get(node, path, timeout=10.0):
    """GET on `node`: (status, headers, body), or (None, {}, b"") when it does not answer."""
    try:
        return request(node.port, "GET", path, timeout=timeout)
    except (OSError, http.client.HTTPException):
        return None, {}, b""


class Receiver:
    """A webhook receiver on 127.0.0.1: records every POST and answers {"done": true} (PROTOCOL.md 7.1:
    the server then acks the wake's tails itself)."""

    def __init__(self):
        self.deliveries = []
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with outer.lock:
                    outer.deliveries.append({"body": json.loads(body),
                                             "signature": self.headers.get("Webhook-Signature", "")})
                answer = b'{"done":true}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer((HOST, 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def all(self):
        with self.lock:
            return list(self.deliveries)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def kid_of(signature):
    m = re.search(r"(?:^|,)kid=([^,]+)", signature)
    return m.group(1) if m else None


def main():
    cluster = cs.Cluster(sys.argv[1], extra=["--allow-loopback-webhooks", "true", "--threads", "2"],
                         prefix="weir-cluster-subscriptions-")
    nodes = cluster.nodes
    receiver = Receiver()
    hook = "http://%s:%d/hook" % (HOST, receiver.port)
    ok = False
    try:
        cluster.start()
        for n in nodes.values():
            wait_for("node %d to have a quorum" % n.id, lambda n=n: n.healthz() == 200, 30)
        groups = nodes[1].status()["groups"]
        group = cs.subscription_group(ROOT + SUB_ID, groups)

        # A stream the subscription's pattern matches, before the subscription: linked at its tail.
        st, _, body = request(nodes[1].port, "PUT", ROOT + "events/a", body=b"[]",
                              headers={"Content-Type": "application/json"})
        assert st == 201, "create events/a: %d %s" % (st, body)

        sub = json.dumps({"type": "webhook", "pattern": "events/*", "webhook": {"url": hook},
                          "lease_ttl_ms": 5000}).encode()
        st, _, body = request(nodes[1].port, "PUT", ROOT + "__ds/subscriptions/" + SUB_ID, body=sub,
                              headers={"Content-Type": "application/json"})
        assert st == 201, "create the subscription through node 1: %d %s" % (st, body)
        created = json.loads(body)

        # Read back from the other nodes: the same subscription, the same link.
        for i in (2, 3):
            st, _, body = get(nodes[i], ROOT + "__ds/subscriptions/" + SUB_ID)
            assert st == 200, "GET from node %d: %s %s" % (i, st, body)
            got = json.loads(body)
            assert got["id"] == SUB_ID and got["pattern"] == "events/*", got
            assert got["webhook"]["url"] == hook, got
            assert [s["path"] for s in got["streams"]] == ["events/a"], got
            assert got["created_at"] == created["created_at"], (got, created)
        print("subscription created through node 1, read back from nodes 2 and 3 (raft group %d)" % group,
              flush=True)

        def acked(port_node, want):
            st, _, body = get(port_node, ROOT + "__ds/subscriptions/" + SUB_ID)
            if st != 200:
                return False
            links = {s["path"]: s["acked_offset"] for s in json.loads(body)["streams"]}
            return links.get("events/a") == want

        # An append through node 3 wakes the subscription once.
        st, hdrs, body = request(nodes[3].port, "POST", ROOT + "events/a", body=b'{"n":1}',
                                 headers={"Content-Type": "application/json"})
        assert st in (200, 204), "append through node 3: %d %s" % (st, body)
        tail1 = hdrs["stream-next-offset"]
        wait_for("the first delivery", lambda: receiver.all(), 30)
        # The {"done":true} answer acks the snapshot's tail: once that is committed the wake is over.
        wait_for("the first wake's ack to be committed", lambda: acked(nodes[2], tail1), 30)
        first = receiver.all()
        assert len(first) == 1, "one wake, %d deliveries: %s" % (len(first), first)
        d1 = first[0]
        assert d1["body"]["subscription_id"] == SUB_ID and d1["body"]["generation"] == 1, d1
        assert [s["tail_offset"] for s in d1["body"]["streams"]] == [tail1], d1
        leader = nodes[1].status()["raft_groups"][group]["leader"]
        assert leader in nodes, "group %d has no leader: %s" % (group, leader)
        kid1 = kid_of(d1["signature"])
        print("one delivery for the first wake (generation 1), signed %s, by the leader of group %d: node %d"
              % (kid1, group, leader), flush=True)

        # Every node's JWKS lists the key that signed it (receivers read the jwks_url of node 1).
        for i in (1, 2, 3):
            st, _, body = get(nodes[i], ROOT + "__ds/jwks.json")
            assert st == 200, (i, st, body)
            kids = [k["kid"] for k in json.loads(body)["keys"]]
            assert kid1 in kids, "node %d's JWKS lacks %s: %s" % (i, kid1, kids)

        # Kill the leader of the subscription's group; an append through a survivor still wakes it.
        nodes[leader].kill()
        survivors = [i for i in nodes if i != leader]
        print("node %d killed; appending through node %d" % (leader, survivors[-1]), flush=True)

        def append_again():
            try:
                st, hdrs, _ = request(nodes[survivors[-1]].port, "POST", ROOT + "events/a", body=b'{"n":2}',
                                      headers={"Content-Type": "application/json"}, timeout=10)
            except (OSError, http.client.HTTPException):
                return None
            return hdrs["stream-next-offset"] if st in (200, 204) else None  # 503 while a leader is elected

        tail2 = wait_for("an append after the failover", append_again, 30, interval=0.2)
        wait_for("the delivery after the failover", lambda: len(receiver.all()) >= 2, 30)
        wait_for("the second wake's ack to be committed", lambda: acked(nodes[survivors[0]], tail2), 30)
        after = receiver.all()
        assert len(after) == 2, "two wakes, %d deliveries: %s" % (len(after), after)
        d2 = after[1]
        assert d2["body"]["generation"] == 2, d2
        assert [s["tail_offset"] for s in d2["body"]["streams"]] == [tail2], d2
        new_leader = nodes[survivors[0]].status()["raft_groups"][group]["leader"]
        assert new_leader in survivors, "group %d led by %s after the failover" % (group, new_leader)
        kid2 = kid_of(d2["signature"])
        assert kid2 != kid1, "the second wake was signed by the killed node's key %s" % kid1
        st, _, body = get(nodes[new_leader], ROOT + "__ds/jwks.json")
        own = json.loads(body)["keys"][0]["kid"]  # a node lists its own key first
        assert kid2 == own, "signed %s, the new leader (node %d) holds %s" % (kid2, new_leader, own)
        print("after the failover: one delivery (generation 2) from the new leader, node %d" % new_leader,
              flush=True)

        # The killed node comes back: it replays its node log into its replica and delivers nothing of
        # its own (whether or not it leads the group again); the next wake is still delivered once.
        nodes[leader].start()
        wait_for("node %d to have a quorum again" % leader, lambda: nodes[leader].healthz() == 200, 30)
        st, _, body = get(nodes[leader], ROOT + "__ds/subscriptions/" + SUB_ID)
        assert st == 200 and json.loads(body)["streams"][0]["acked_offset"] == tail2, (st, body)
        st, hdrs, body = request(nodes[leader].port, "POST", ROOT + "events/a", body=b'{"n":3}',
                                 headers={"Content-Type": "application/json"})
        assert st in (200, 204), "append through the restarted node: %d %s" % (st, body)
        tail3 = hdrs["stream-next-offset"]
        wait_for("the delivery after the restart", lambda: len(receiver.all()) >= 3, 30)
        wait_for("the third wake's ack to be committed", lambda: acked(nodes[leader], tail3), 30)
        final = receiver.all()
        assert len(final) == 3, "three wakes, %d deliveries: %s" % (len(final), final)
        assert final[2]["body"]["generation"] == 3, final[2]
        assert [s["tail_offset"] for s in final[2]["body"]["streams"]] == [tail3], final[2]
        print("node %d restarted: one delivery (generation 3)" % leader, flush=True)
        ok = True
    finally:
        cluster.stop_all()
        cluster.kill_all()
        receiver.close()
        if not ok:
            for n in nodes.values():
                print("---- node %d log (end) ----\n%s" % (n.id, n.log_tail(40)), flush=True)
        cluster.remove()
    print("PASS" if ok else "FAIL", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

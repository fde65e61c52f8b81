"""Forks across raft groups on a 3-node weir cluster (label: integration; docs/replication.md, "Forks").

A source and its forks live in different groups (their paths hash apart), which commit and apply
independently. Checked:
  1. a fork created on one node reads, right after its create was acknowledged, as its source's prefix
     on each of the other nodes (catch-up read and HEAD): a node serves a read of a fork only once the
     source's group applied the fork's retain there; also for a fork of a fork (a chain of three groups);
  2. every node counts the same fork references (GET /cluster `fork_references`) once it applied the
     same entries: one per fork;
  3. deleting the forks (on another node than the one that made them) takes the references back on
     every node: each release is an entry of the source's group; a source deleted while forks held it
     (soft-deleted, its forks still read) is gone on every node once its last fork is (cascading across
     groups, through a fork of a fork);
  4. a node that lags in the source's group only: node 1's link to node 3 runs through a proxy, which
     stalls while the source (in a group node 1 leads) gets more data and a fork is made through node 2
     (in a group node 2 leads, which node 3 keeps applying). A read of the fork on node 3 then must
     wait until the source's group caught up there (the proxy lets bytes through again a little later)
     and return the whole prefix: without the wait it answers at once with what node 3 has of the
     source, which lacks the appends made during the stall.

  5. a JSON fork of a fork whose point lies in the bytes the first fork inherited from its source, in a
     third group: its retain carries the record beginning at the point (command kind 14, the record
     decides; docs/cold-tier.md, "Forks"), so every node applies the same answer. Forks at record starts
     and with a sub-offset (a message of the cut record) are taken and read alike on every node; a point
     inside a record is refused (400).

Usage: cluster_forks_test.py WEIR_BINARY
"""
import json
import os
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_support as cs  # noqa: E402
from cluster_support import check  # noqa: E402

OCTET = {"Content-Type": "application/octet-stream"}


def req(node, method, path, body=None, headers=None):
    return cs.request(node.port, method, path, body=body, headers=headers, timeout=20)


def paths_in_distinct_groups(prefix, count, taken):
    """`count` paths "<prefix>-K", each in a group none of `taken` (and none of the others) is in."""
    out, groups, k = [], set(cs.fnv_group(p) for p in taken), 0
    while len(out) < count:
        p = "%s-%d" % (prefix, k)
        g = cs.fnv_group(p)
        if g not in groups:
            out.append(p)
            groups.add(g)
        k += 1
    return out


def fork_refs(node):
    st = node.status()
    if st is None:
        return None
    refs = cs.summed(st, "fork_references")  # every lane's
    return refs["sources"], refs["references"]


def wait_refs(cluster, want, what):
    """Every node reports `want` (sources, references)."""
    def ok():
        return all(fork_refs(n) == want for n in cluster.nodes.values())

    try:
        cs.wait_for(what, ok, 15)
    except TimeoutError:
        check(False, "%s: nodes report %s, want %s"
              % (what, {i: fork_refs(n) for i, n in sorted(cluster.nodes.items())}, want))


def read_everywhere_but(cluster, creator, path, want, what):
    """A catch-up read and a HEAD of `path` on every node but `creator`, at once, in turn."""
    for i, n in sorted(cluster.nodes.items()):
        if i == creator:
            continue
        try:
            data, _ = cs.read_stream(n, path)
        except RuntimeError as e:
            check(False, "%s: %s" % (what, e))
            continue
        check(data == want, "%s: node %d reads %d bytes right after the create on node %d, the source's "
              "prefix is %d" % (what, i, len(data), creator, len(want)))
        st, hdrs, _ = req(n, "HEAD", path)
        check(st == 200, "%s: HEAD on node %d: %d" % (what, i, st))


def pick_groups(cluster):
    """A group that node 1 leads and one that node 2 leads, each the node balance-leaders gives it (group
    g goes to node g % 3 + 1), so that neither moves during the test; as every node sees it."""
    def ok():
        views = [n.status() for n in cluster.nodes.values()]
        if any(v is None for v in views):
            return None
        leaders = [[g["leader"] for g in v["raft_groups"]] for v in views]
        if any(ls != leaders[0] for ls in leaders):
            return None
        by1 = [g for g, l in enumerate(leaders[0]) if l == 1 and g % 3 == 0]
        by2 = [g for g, l in enumerate(leaders[0]) if l == 2 and g % 3 == 1]
        return by1 and by2 and (by1[0], by2[0])

    return cs.wait_for("a group led by node 1 and one led by node 2", ok, 60, interval=0.2)


def path_in_group(prefix, group):
    k = 0
    while cs.fnv_group("%s-%d" % (prefix, k)) != group:
        k += 1
    return "%s-%d" % (prefix, k)


def lagging_source_group(cluster, proxy):
    """Part 4 (see the module comment)."""
    g_src, g_fork = pick_groups(cluster)
    source = path_in_group("/v1/stream/lag-source", g_src)
    fork = path_in_group("/v1/stream/lag-fork", g_fork)
    print("lagging node: source in group %d (node 1 leads), fork in group %d (node 2 leads)" % (g_src, g_fork),
          flush=True)
    st, _, body = req(cluster.node(1), "PUT", source, headers=OCTET)
    check(st == 201, "PUT %s: %d %r" % (source, st, body[:200]))
    want = b"before;"
    st, _, _ = req(cluster.node(1), "POST", source, body=want, headers=OCTET)
    check(st in (200, 204), "append before the stall: %d" % st)
    data, _ = cs.read_stream(cluster.node(3), source)
    check(data == want, "node 3 reads %r before the stall" % data)
    # Node 3 hears nothing from node 1 from here on, for well under an election timeout (1-2 s).
    proxy.stall()
    restore = threading.Timer(0.6, proxy.restore)
    try:
        for k in range(8):
            rec = b"during-the-stall-%d;" % k
            st, _, _ = req(cluster.node(1), "POST", source, body=rec, headers=OCTET)
            if check(st in (200, 204), "append %d during the stall: %d" % (k, st)):
                want += rec
        st, _, body = req(cluster.node(2), "PUT", fork, headers=dict(OCTET, **{"Stream-Forked-From": source}))
        check(st == 201, "fork %s on node 2: %d %r" % (fork, st, body[:200]))
        restore.start()
        data, _ = cs.read_stream(cluster.node(3), fork)
        check(data == want, "the fork read on node 3, which lagged in the source's group: %d bytes of %d (%r)"
              % (len(data), len(want), data[:80]))
    finally:
        restore.cancel()
        proxy.restore()
    for path in (fork, source):
        st, _, _ = req(cluster.node(3), "DELETE", path)
        check(st in (200, 204), "DELETE %s: %d" % (path, st))


def json_fork_of_fork(cluster):
    """Part 5 (see the module comment)."""
    JSON = {"Content-Type": "application/json"}
    source = "/v1/stream/json-source"
    first, at_start, cut, inside = paths_in_distinct_groups("/v1/stream/json-fork", 4, [source])
    st, _, body = req(cluster.node(1), "PUT", source, headers=JSON)
    check(st == 201, "PUT %s: %d %r" % (source, st, body[:200]))
    starts, messages = [], []  # each record's start offset; every message
    offset = None
    for k in range(6):
        starts.append(offset)
        batch = [{"k": k, "m": m} for m in range(2)]
        st, hdrs, body = req(cluster.node(1 + k % 3), "POST", source,
                             body=json.dumps(batch).encode(), headers=JSON)
        check(st in (200, 204), "JSON append %d: %d %r" % (k, st, body[:200]))
        offset = hdrs.get("stream-next-offset")
        messages += batch
    st, _, body = req(cluster.node(2), "PUT", first, headers=dict(JSON, **{"Stream-Forked-From": source}))
    check(st == 201, "JSON fork %s on node 2: %d %r" % (first, st, body[:200]))
    # At the start of record 3, through node 3; with a sub-offset of 1 at record 2, through node 1.
    want = {at_start: messages[:6], cut: messages[:5]}
    for path, node, fork_offset, sub in ((at_start, 3, starts[3], None), (cut, 1, starts[2], "1")):
        headers = dict(JSON, **{"Stream-Forked-From": first, "Stream-Fork-Offset": fork_offset})
        if sub:
            headers["Stream-Fork-Sub-Offset"] = sub
        st, _, body = req(cluster.node(node), "PUT", path, headers=headers)
        check(st == 201, "JSON fork of a fork %s on node %d: %d %r" % (path, node, st, body[:200]))
    # One byte past a record's start: no record begins there.
    mid = starts[3].rsplit("_", 1)
    inside_offset = "%s_%0*d" % (mid[0], len(mid[1]), int(mid[1]) + 1)
    st, _, body = req(cluster.node(2), "PUT", inside,
                      headers=dict(JSON, **{"Stream-Forked-From": first, "Stream-Fork-Offset": inside_offset}))
    check(st == 400, "JSON fork of a fork inside a record: %d %r" % (st, body[:200]))
    for i, n in sorted(cluster.nodes.items()):
        for path, msgs in want.items():
            data, _ = cs.read_stream(n, path)
            got = json.loads(data.decode()) if data else None
            check(got == msgs, "%s on node %d: %r, want %r" % (path, i, got, msgs))
        st, _, _ = req(n, "HEAD", inside)
        check(st == 404, "the refused fork on node %d: HEAD %d" % (i, st))
    for path in (at_start, cut, first, source):
        st, _, _ = req(cluster.node(1), "DELETE", path)
        check(st in (200, 204), "DELETE %s: %d" % (path, st))


def main():
    weir = sys.argv[1]
    t0 = time.monotonic()
    peer_ports = {i: cs.free_port() for i in (1, 2, 3)}
    proxy = cs.LinkProxy(peer_ports[3])  # node 1's link to node 3 (part 4)

    def peers_for(i, ports):
        return ",".join("%d=%s:%d" % (j, cs.HOST, proxy.port if (i, j) == (1, 3) else ports[j])
                        for j in sorted(ports))

    cluster = cs.Cluster(weir, ["--threads", "2"], peers_for=peers_for, peer_ports=peer_ports,
                         prefix="weir-cluster-forks-")
    ok = False
    error = None
    try:
        cluster.start()
        cluster.wait_healthy(timeout=30)
        source = "/v1/stream/fork-source"
        forks = paths_in_distinct_groups("/v1/stream/fork-of-source", 6, [source])
        chained = paths_in_distinct_groups("/v1/stream/fork-of-fork", 1, [source] + forks)[0]
        print("source in group %d, forks in groups %s, the fork of a fork in group %d"
              % (cs.fnv_group(source), [cs.fnv_group(f) for f in forks], cs.fnv_group(chained)), flush=True)

        st, _, body = req(cluster.node(1), "PUT", source, headers=OCTET)
        check(st == 201, "PUT %s: %d %r" % (source, st, body[:200]))
        content = b""
        at_fork = []  # the source's content when each fork was made
        # Each fork comes after more appends (made through every node), and is created through another
        # node than the appends just before it: the source's group has entries the readers must apply.
        for k, fork in enumerate(forks):
            for r in range(20):
                rec = b"%d.%d;" % (k, r) + bytes(1000)
                n = cluster.node(1 + (k + r) % 3)
                st, _, body = req(n, "POST", source, body=rec, headers=OCTET)
                if check(st in (200, 204), "append %d.%d on node %d: %d %r" % (k, r, n.id, st, body[:200])):
                    content += rec
            creator = 1 + k % 3
            at_fork.append(content)
            st, _, body = req(cluster.node(creator), "PUT", fork,
                              headers=dict(OCTET, **{"Stream-Forked-From": source}))
            if check(st == 201, "fork %s on node %d: %d %r" % (fork, creator, st, body[:200])):
                read_everywhere_but(cluster, creator, fork, content, "fork %d" % k)
        # A fork of a fork, made on node 3: its reads wait for two groups.
        chain_want = at_fork[0]
        st, _, body = req(cluster.node(3), "PUT", chained,
                          headers=dict(OCTET, **{"Stream-Forked-From": forks[0]}))
        if check(st == 201, "fork of a fork on node 3: %d %r" % (st, body[:200])):
            read_everywhere_but(cluster, 3, chained, chain_want, "the fork of a fork")
        print("forks read on every other node at once: %.1f s" % (time.monotonic() - t0), flush=True)

        # 2. The same counts everywhere: the source holds 6, forks[0] holds 1.
        wait_refs(cluster, (2, len(forks) + 1), "after the forks")

        # 3. The source is deleted while forks hold it: soft-deleted, its forks still read.
        st, _, _ = req(cluster.node(2), "DELETE", source)
        check(st in (200, 204), "DELETE %s: %d" % (source, st))
        for i, n in sorted(cluster.nodes.items()):
            st, _, _ = req(n, "HEAD", source)
            check(st in (404, 410), "HEAD of the deleted source on node %d: %d" % (i, st))
            data, _ = cs.read_stream(n, forks[-1])
            check(data == content, "fork of the deleted source on node %d: %d bytes" % (i, len(data)))
        # Forks deleted through another node than the one that made them; forks[0] first, which the
        # fork of a fork still holds (soft-deleted).
        for k, fork in enumerate(forks):
            n = cluster.node(1 + (k + 1) % 3)
            st, _, _ = req(n, "DELETE", fork)
            check(st in (200, 204), "DELETE %s on node %d: %d" % (fork, n.id, st))
        wait_refs(cluster, (2, 2), "after deleting the forks but forks[0]'s fork")
        for i, n in sorted(cluster.nodes.items()):
            data, _ = cs.read_stream(n, chained)
            check(data == chain_want, "the fork of a fork on node %d after its sources were deleted: %d bytes"
                  % (i, len(data)))
        st, _, _ = req(cluster.node(1), "DELETE", chained)
        check(st in (200, 204), "DELETE %s: %d" % (chained, st))
        # Its release frees forks[0], whose release frees the source: on every node.
        wait_refs(cluster, (0, 0), "after the last fork")
        for i, n in sorted(cluster.nodes.items()):
            for path in [source, forks[0]]:
                st, _, _ = req(n, "PUT", path, headers=OCTET)
                check(st == 201, "%s re-created on node %d after the cascade: %d (still held?)" % (path, i, st))
                st, _, _ = req(n, "DELETE", path)
                check(st in (200, 204), "DELETE of the re-created %s on node %d: %d" % (path, i, st))

        # 4. A node behind in the source's group only.
        lagging_source_group(cluster, proxy)
        wait_refs(cluster, (0, 0), "after the lagging node's fork and source were deleted")
        # 5. A JSON fork of a fork at points in bytes inherited from another group.
        json_fork_of_fork(cluster)
        wait_refs(cluster, (0, 0), "after the JSON forks were deleted")
        ok = True
    except Exception as e:  # noqa: BLE001 - any error ends the test with a report
        error = e
    status = cs.conclude("cluster_forks", cluster, ok, t0, error)
    proxy.close()
    return status


if __name__ == "__main__":
    sys.exit(main())

"""A 3-node weir cluster with a cold tier against s3rver (label: integration; docs/cold-tier.md,
"A cluster").

Each raft group's leader uploads its streams' bytes to the bucket and records the objects through raft;
every node applies the index records and, over its --local-bytes budget, drops its own copies of bytes
that are in objects (followers too). With small segments, objects and budget:
  1. about 6 times the budget is written through all three nodes (byte streams and a JSON stream); every
     node's data log stays within the budget plus a few segments, every node dropped bytes and reads
     some back from the bucket, each group uploads from one node (GET /cluster: cold_tier), /healthz
     says ok, and every stream reads back whole and identical from every node;
  2. the node that leads a stream's group is killed (SIGKILL) while more is written: a new leader
     uploads under its own term; every acknowledged byte reads back from the two live nodes;
  3. the killed node starts again and catches up (group snapshots every 16 entries carry the groups'
     cold index, not the dropped bytes): every stream reads back the same from all three nodes;
  4. the bucket's keys are named by epoch, group, term and sequence, and the killed leader's group has
     objects under two terms at least (its new leader uploaded under its own);
  5. a stream is deleted: its group's leader deletes the objects only it named (after --cold-gc-grace-ms),
     and every other stream still reads back whole from every node;
  6. the whole cluster is lost (every node killed, every data directory removed) and three empty nodes
     start with --restore: each writes the groups' newest restore snapshots from the bucket into its raft
     logs; every stream reads back whole from every node, writes go on, and a restored node restarts.

Usage: cluster_cold_test.py WEIR_BINARY NODE_DIR S3RVER_SCRIPT
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import shutil
import urllib.parse

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_support as cs  # noqa: E402
from cluster_support import check, failures  # noqa: E402

BUCKET = "weir-cluster-cold"
SEGMENT_BYTES = 64 * 1024
OBJECT_BYTES = 64 * 1024
LOCAL_BYTES = 2 * 1024 * 1024
RAFT_SNAPSHOT_BYTES = 64 * 1024
# A node's stream data on disk (its data log, and its node log: the raft entries since each group's last
# snapshot and the segments kept for records in them) stays within the budget, which keeps room for 8
# groups' raft logs (1.25 raft-snapshot-bytes each) and three segments, plus a few segments: the data
# log's active one, and node-log segments kept whole while any record in them (of any of the groups
# whose entries share the segment) is referenced or pinned by a snapshot.
DISK_BOUND = LOCAL_BYTES + 6 * SEGMENT_BYTES
OCTET = {"Content-Type": "application/octet-stream"}
JSON = {"Content-Type": "application/json"}


class S3rver:
    """s3rver (npm, tests/node) on 127.0.0.1 with one bucket; stopped by its PID."""

    def __init__(self, node_dir, script):
        self.dir = tempfile.mkdtemp(prefix="weir-cluster-cold-s3-")
        self.out = os.path.join(self.dir, "s3rver.out")
        with open(self.out, "w") as out:
            self.proc = subprocess.Popen(["node", "--openssl-legacy-provider", os.path.abspath(script),
                                          os.path.abspath(node_dir),
                                          os.path.join(self.dir, "files"), BUCKET, "0"],
                                         stdout=out, stderr=subprocess.STDOUT)

        def port():
            if self.proc.poll() is not None:
                raise RuntimeError("s3rver exited:\n" + open(self.out).read())
            m = re.search(r"^port (\d+)$", open(self.out).read(), re.M)
            return int(m.group(1)) if m else None

        self.port = cs.wait_for("s3rver to listen", port, 20)

    def keys(self):
        """Every object key of the bucket (s3rver keeps each as a file `<key>._S3rver_object`)."""
        root = os.path.join(self.dir, "files", BUCKET)
        out = []
        for base, _, files in os.walk(root):
            for f in files:
                if f.endswith("._S3rver_object"):
                    out.append(os.path.relpath(os.path.join(base, f), root)[: -len("._S3rver_object")])
        return sorted(out)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def req(node, method, path, body=None, headers=None):
    return cs.request(node.port, method, path, body=body, headers=headers, timeout=20)


def append(node, path, body, headers):
    """POST, retried on 503 (a leader hand-over, or the budget of bytes not in the bucket yet)."""
    for _ in range(300):
        try:
            st, _, _ = req(node, "POST", path, body=body, headers=headers)
        except OSError:
            st = 0
        if st not in (0, 503):
            return st
        time.sleep(0.1)
    return st


def metrics(node):
    """The node's /metrics samples without labels, summed over label sets: {name: value}."""
    try:
        st, _, body = req(node, "GET", "/metrics")
    except OSError:
        return None
    if st != 200:
        return None
    out = {}
    for line in body.decode().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, _, value = line.rpartition(" ")
        name = name.split("{")[0]
        try:
            out[name] = out.get(name, 0) + float(value)
        except ValueError:
            pass
    return out


def data_log_bytes(node):
    """Bytes of stream data the node keeps on disk: its data-log segment files and every node-log segment,
    live and kept for the records in them (every lane's; docs/replication.md, "Stream data on a cluster
    node"; docs/cold-tier.md, "A cluster")."""
    total = 0
    for entry in os.listdir(node.data_dir):
        if entry == "data" or entry.startswith("data-"):
            d = os.path.join(node.data_dir, entry)
            total += sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
    for d, _, files in os.walk(os.path.join(node.data_dir, "raft")):
        total += sum(os.path.getsize(os.path.join(d, f)) for f in files if f.startswith("node.log."))
    return total


def read_json(node, path):
    """The messages of a JSON stream read on `node` from the start: every response must be a JSON array
    of whole messages (a read of bytes from the bucket ends at a message boundary)."""
    messages, offset = [], "-1"
    for _ in range(100000):
        st, hdrs, body = req(node, "GET", "%s?offset=%s" % (path, urllib.parse.quote(offset)))
        if st != 200:
            raise RuntimeError("GET %s on node %d: %d %r" % (path, node.id, st, body[:200]))
        try:
            messages += json.loads(body)
        except ValueError as e:
            raise RuntimeError("GET %s on node %d at %s: not a JSON array (%s): ...%r" %
                               (path, node.id, offset, e, body[-80:]))
        if hdrs.get("stream-up-to-date") == "true":
            return messages
        offset = hdrs["stream-next-offset"]
    raise RuntimeError("GET %s never reached the tail" % path)


def check_reads(nodes, expected, what):
    for n in nodes:
        for path, want in expected.items():
            try:
                got = read_json(n, path) if path.endswith("json") else cs.read_stream(n, path)[0]
            except RuntimeError as e:
                check(False, "%s: %s" % (what, e))
                continue
            if path.endswith("json"):
                check(got == want, "%s: node %d reads %d JSON messages of %s, wrote %d" %
                      (what, n.id, len(got), path, len(want)))
            else:
                check(got == want, "%s: node %d reads %d bytes of %s (wrote %d), first difference at %s" %
                      (what, n.id, len(got), path, len(want),
                       next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))))


def write_round(cluster, expected, rounds, tag):
    """`rounds` appends of 16 KiB to each byte stream and of a JSON message, through the nodes in turn."""
    live = [n for n in cluster.nodes.values() if n.alive()]
    for r in range(rounds):
        for k, path in enumerate(sorted(expected)):
            node = live[(r + k) % len(live)]
            if path.endswith("json"):
                # Commas, brackets and quotes inside strings: a cut in the middle of a message would not
                # parse.
                message = {"round": r, "tag": tag, "pad": 'a, ] } \\" [ {' * 200}
                st = append(node, path, json.dumps([message]).encode(), JSON)
                if check(st in (200, 204), "%s: JSON append %d through node %d: %d" % (tag, r, node.id, st)):
                    expected[path].append(message)
                continue
            body = (("%s-%s-%06d|" % (tag, path[-1], r)) * 1024).encode()[:16384]
            st = append(node, path, body, OCTET)
            if check(st in (200, 204), "%s: append %d to %s through node %d: %d" % (tag, r, path, node.id, st)):
                expected[path] += body


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    t0 = time.monotonic()
    s3 = S3rver(sys.argv[2], sys.argv[3])
    os.environ["AWS_ACCESS_KEY_ID"] = "S3RVER"
    os.environ["AWS_SECRET_ACCESS_KEY"] = "S3RVER"
    settings = ["--threads", "1", "--raft-groups", "8", "--raft-snapshot-entries", "16",
                "--raft-snapshot-bytes", str(RAFT_SNAPSHOT_BYTES),
                "--raft-snapshot-trailing", "4", "--hot-bytes", "65536",
                "--segment-bytes", str(SEGMENT_BYTES), "--raft-segment-bytes", str(SEGMENT_BYTES),
                "--cold", "s3://%s/c" % BUCKET,
                "--s3-endpoint", "http://127.0.0.1:%d" % s3.port, "--cold-object-bytes", str(OBJECT_BYTES),
                "--cold-max-age-ms", "200", "--local-bytes", str(LOCAL_BYTES), "--cold-gc-grace-ms", "1000",
                "--cold-snapshot-interval-ms", "500"]
    cluster = cs.Cluster(sys.argv[1], extra=settings, prefix="weir-cluster-cold-")
    ok = False
    error = None
    try:
        cluster.start()
        cluster.wait_healthy()
        n1 = cluster.node(1)
        expected = {"/v1/stream/cold-a": b"", "/v1/stream/cold-b": b"", "/v1/stream/cold-c": b"",
                    "/v1/stream/cold-json": []}
        for path in expected:
            st, _, _ = req(n1, "PUT", path, headers=JSON if path.endswith("json") else OCTET)
            check(st == 201, "create %s: %d" % (path, st))

        # 1. Six times the budget, through every node.
        write_round(cluster, expected, 128, "one")
        nodes = list(cluster.nodes.values())

        def settled():
            ms = [metrics(n) for n in nodes]
            if any(m is None for m in ms):
                return False
            uploaded = sum(m.get("weir_tier_objects_uploaded_total", 0) for m in ms)
            return uploaded > 0 and all(m.get("weir_tier_dropped_bytes_total", 0) > 0 for m in ms) and ms

        ms = cs.wait_for("every node to drop bytes that are in objects", settled, 60)
        for n, m in zip(nodes, ms):
            print("node %d: %d objects uploaded, %d bytes dropped, %d held, data log %d bytes" %
                  (n.id, m.get("weir_tier_objects_uploaded_total", 0), m.get("weir_tier_dropped_bytes_total", 0),
                   m.get("weir_tier_held_bytes", 0), data_log_bytes(n)), flush=True)
        # /cluster: every group uploads from one node, its leader (the movers follow leadership at each
        # pass); /healthz: the tier is not failing.
        def uploading():
            views = [n.status() for n in nodes]
            if any(v is None for v in views):
                return None
            total = sum(cs.summed(v, "cold_tier")["groups_uploading"] for v in views)
            return total == 8 and views

        try:
            views = cs.wait_for("each group to upload from one node", uploading, 30)
            check(all(cs.summed(v, "cold_tier")["last_upload_error"] == "" for v in views),
                  "an upload error in /cluster")
        except TimeoutError:
            check(False, "groups uploading per node: %s" %
                  [cs.summed(n.status(), "cold_tier")["groups_uploading"] for n in nodes])
        for n in nodes:
            st, _, body = req(n, "GET", "/healthz")
            check(st == 200 and body == b"ok\n", "node %d /healthz: %d %r" % (n.id, st, body))
        check_reads(nodes, expected, "after the first writes")
        for n in nodes:
            m = metrics(n)
            check(m and m.get("weir_tier_bucket_reads_total", 0) > 0,
                  "node %d read nothing from the bucket" % n.id)

        def within_budget():
            return all(data_log_bytes(n) <= DISK_BOUND for n in nodes)

        try:
            cs.wait_for("every node's stream data on disk within the budget", within_budget, 60)
        except TimeoutError:
            check(False, "stream data on disk over the budget: %s" % [(n.id, data_log_bytes(n)) for n in nodes])

        # 2. The leader of cold-a's group killed while more is written.
        group = cs.fnv_group("/v1/stream/cold-a", 8)
        leader = cluster.wait_all_leaders(via=1)["raft_groups"][group]["leader"]
        victim = cluster.node(leader)
        print("killing node %d, the leader of group %d" % (leader, group), flush=True)
        victim.kill()
        write_round(cluster, expected, 48, "two")
        live = [n for n in nodes if n.alive()]
        check_reads(live, expected, "with the leader killed")

        # 3. It comes back and catches up.
        victim.start()
        cluster.wait_healthy()
        cluster.wait_caught_up(victim.id, timeout=60)
        check_reads(nodes, expected, "after the restart")

        # 4. Each key once, named by group, term and sequence.
        keys = [k for k in s3.keys() if "/snap/" not in k]
        print("%d objects in the bucket (restore snapshots aside)" % len(keys), flush=True)
        named = [re.match(r"c/e(\d+)/g(\d+)/t(\d+)-s(\d+)", k) for k in keys]
        check(keys and all(named), "keys not named by epoch, group, term and sequence: %s" % keys[:5])
        terms = {int(m.group(3)) for m in named if m and int(m.group(2)) == group}
        check(len(terms) >= 2, "group %d has objects under terms %s only" % (group, sorted(terms)))

        # 5. A deleted stream's objects go (the other streams' groups are other groups: 8 groups, and
        # the streams were chosen by name only, so count what the deleted stream's group had).
        doomed = "/v1/stream/cold-b"
        g = cs.fnv_group(doomed, 8)
        shares = [p for p in expected if p != doomed and cs.fnv_group(p, 8) == g]
        before = [k for k in s3.keys() if re.match(r"c/e\d+/g%08d/" % g, k)]
        st, _, _ = req(cluster.node(1), "DELETE", doomed)
        check(st in (200, 204), "delete %s: %d" % (doomed, st))
        del expected[doomed]
        group_keys = lambda: [k for k in s3.keys() if re.match(r"c/e\d+/g%08d/" % g, k)]
        # Alone in its group (as the names fall in 8 groups), every object of the group goes.
        left = 0 if not shares else len(before) - 1
        try:
            cs.wait_for("the leader of group %d to delete the objects of %s" % (g, doomed),
                        lambda: len(group_keys()) <= left, 60)
        except TimeoutError:
            check(False, "group %d keeps %d of its %d objects after %s was deleted" %
                  (g, len(group_keys()), len(before), doomed))
        deleted = sum((metrics(n) or {}).get("weir_tier_objects_deleted_total", 0) for n in nodes)
        # A node counts what it deleted since it started (node 2's count was lost with its restart).
        check(deleted > 0, "/metrics counts no object deleted")
        after = [k for k in s3.keys() if re.match(r"c/e\d+/g%08d/" % g, k)]
        print("group %d: %d objects before the delete, %d after (%d other streams in it)" %
              (g, len(before), len(after), len(shares)), flush=True)
        check(len(after) < len(before), "group %d still has %d objects of %d" % (g, len(after), len(before)))
        check_reads(nodes, expected, "after the delete and the sweep")

        # 6. Every disk lost; the cluster comes back from the bucket.
        def snapshots_settled(state={"last": None, "since": 0.0}):
            views = [n.status() for n in nodes]
            if any(v is None for v in views):
                return False
            total = sum(cs.summed(v, "cold_tier").get("restore_snapshots", 0) for v in views)
            groups = {int(m.group(1)) for m in (re.match(r"c/e0001/snap/g(\d+)/", k) for k in s3.keys()) if m}
            now = time.monotonic()
            if total != state["last"]:
                state["last"], state["since"] = total, now
            return len(groups) == 8 and now - state["since"] > 3

        cs.wait_for("every group's restore snapshot to cover what it applied", snapshots_settled, 90, interval=0.5)
        for n in nodes:
            n.kill()
            shutil.rmtree(n.data_dir)
        for n in nodes:
            n.start(wait=False, extra=["--restore", "true"])
        for n in nodes:
            n.wait_listening(timeout=60)
        cluster.wait_healthy(timeout=60)
        restored = cluster.grep_logs(r"restored \d+ groups")
        check(len(restored) == 3, "restore log lines: %s" % restored)
        print("\n".join(restored), flush=True)
        check_reads(nodes, expected, "after the restore")
        write_round(cluster, expected, 8, "three")
        check_reads(nodes, expected, "writing after the restore")
        # A restored node restarts from the raft logs the restore began.
        n1 = cluster.node(1)
        check(n1.stop() == 0, "node 1 did not stop cleanly")
        n1.start()
        cluster.wait_healthy(timeout=60)
        cluster.wait_caught_up(1)
        check_reads([n1], expected, "a restored node restarted")
        ok = not failures
    except Exception as e:  # noqa: BLE001: any failure is reported with the logs
        error = e
    finally:
        rc = cs.conclude("cluster_cold", cluster, ok, t0, error)
        s3.stop()
    return rc


if __name__ == "__main__":
    sys.exit(main())

"""Shared by the cluster tests: real `weir serve` nodes of a 3-node cluster on 127.0.0.1, started and
stopped by PID, their /cluster view, plain HTTP requests, and a TCP proxy that can cut a node's peer
links (docs/operations.md "Cluster").

Every wait polls a node's state with a deadline: a child process's /cluster or /healthz offers no
event to wait on.
"""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse

HOST = "127.0.0.1"

# What check() found wrong, in order (a test fails at the end when this is not empty).
failures = []


def check(cond, what):
    """Records and prints `what` when `cond` is false; returns `cond`. The test goes on."""
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return cond


def free_port():
    """A port nothing listens on now (bound to port 0 and released: a small race, as for any test)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def request(port, method, path, body=None, headers=None, timeout=20.0):
    """One request on a new connection: (status, headers with lower-case names, body bytes).
    Raises OSError (refused, reset, timeout) or http.client.HTTPException."""
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
    finally:
        conn.close()


def fnv_group(path, groups=64):
    """The raft group of a stream path (src/server/replication.cc cluster_group_of: salted FNV-1a)."""
    h = 14695981039346656037 ^ 0x67726F7570
    for c in path.encode():
        h ^= c
        h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h % groups


class Node:
    """One `weir serve --node-id N`; each start logs to a file of its own (node-N.K.log)."""

    def __init__(self, cluster, node_id, peer_port, peers_arg):
        self.cluster = cluster
        self.id = node_id
        self.peer_port = peer_port
        self.peers_arg = peers_arg
        self.data_dir = os.path.join(cluster.workdir, "node-%d" % node_id)
        self.proc = None
        self.port = None
        self.starts = 0
        self.log_path = None
        self.paused = False
        self.stopping = False

    def start(self, wait=True, extra=()):
        """`extra`: arguments for this start only (e.g. --join), after the cluster's."""
        assert self.proc is None or self.proc.poll() is not None, "node %d is running" % self.id
        self.starts += 1
        self.log_path = os.path.join(self.cluster.workdir, "node-%d.%d.log" % (self.id, self.starts))
        log = open(self.log_path, "w")
        # A fixed HTTP port across restarts when one was given before: clients keep their address.
        listen = "%s:%d" % (HOST, self.port) if self.port else "%s:0" % HOST
        args = [self.cluster.weir, "serve", "--listen", listen, "--data-dir", self.data_dir,
                "--node-id", str(self.id), "--peer-listen", "%s:%d" % (HOST, self.peer_port),
                "--peers", self.peers_arg, *self.cluster.extra, *extra]
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        self.stopping = False  # set when the test itself stops or kills it
        log.close()
        self.paused = False
        if wait:
            self.wait_listening()
        return self

    def wait_listening(self, timeout=20):
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("node %d exited (status %s) during start-up:\n%s"
                                   % (self.id, self.proc.returncode, self.log_tail()))
            with open(self.log_path) as f:
                m = re.search(r"listening on 127\.0\.0\.1:(\d+)", f.read())
            if m:
                self.port = int(m.group(1))
                return
            if time.monotonic() > deadline:
                raise RuntimeError("node %d did not start in %d s:\n%s" % (self.id, timeout, self.log_tail()))
            time.sleep(0.02)

    @property
    def url(self):
        return "http://%s:%d" % (HOST, self.port)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        if self.alive():
            os.kill(self.proc.pid, sig)

    def kill(self):
        """SIGKILL by PID and reap."""
        if self.alive():
            self.stopping = True
            if self.paused:
                os.kill(self.proc.pid, signal.SIGCONT)
            os.kill(self.proc.pid, signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait()
        self.paused = False

    def pause(self):
        os.kill(self.proc.pid, signal.SIGSTOP)
        self.paused = True

    def resume(self):
        os.kill(self.proc.pid, signal.SIGCONT)
        self.paused = False

    def stop(self, timeout=15):
        """SIGTERM by PID; the exit status (None: it had to be killed after `timeout`)."""
        if self.proc is None:
            return 0
        if self.alive():
            self.stopping = True
            if self.paused:
                self.resume()
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                return self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                return None
        return self.proc.returncode

    def status(self, timeout=5.0):
        """GET /cluster as a dict, or None when the node does not answer."""
        try:
            st, _, body = request(self.port, "GET", "/cluster", timeout=timeout)
        except (OSError, http.client.HTTPException):
            return None
        return json.loads(body) if st == 200 else None

    def healthz(self, timeout=5.0):
        try:
            return request(self.port, "GET", "/healthz", timeout=timeout)[0]
        except (OSError, http.client.HTTPException):
            return None

    def log_tail(self, lines=30):
        if not self.log_path or not os.path.exists(self.log_path):
            return "(no log)"
        with open(self.log_path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])

    def logs(self):
        out = []
        for k in range(1, self.starts + 1):
            p = os.path.join(self.cluster.workdir, "node-%d.%d.log" % (self.id, k))
            if os.path.exists(p):
                with open(p, errors="replace") as f:
                    out.append((p, f.read()))
        return out


def read_stream(node, path, timeout=20.0):
    """(bytes, last headers) of a catch-up read of `path` on `node` from -1, following
    Stream-Next-Offset until Stream-Up-To-Date. Raises RuntimeError on any status but 200."""
    data, offset = b"", "-1"
    for _ in range(100000):
        st, hdrs, body = request(node.port, "GET", "%s?offset=%s" % (path, urllib.parse.quote(offset)),
                                 timeout=timeout)
        if st != 200:
            raise RuntimeError("GET %s on node %d: %d %r" % (path, node.id, st, body[:200]))
        data += body
        if hdrs.get("stream-up-to-date") == "true":
            return data, hdrs
        offset = hdrs["stream-next-offset"]
    raise RuntimeError("GET %s never reached the tail" % path)


def conclude(name, cluster, ok, t0, error=None):
    """The end of a cluster test: records `error` (an exception that ended it early) and any node that
    exited on its own, stops every node by PID, prints the logs of a failed run, removes its directory,
    prints the outcome; returns the exit status."""
    if error is not None:
        check(False, "%s: %s" % (type(error).__name__, error))
        for line in cluster.unexpected_exits():
            check(False, "a node exited on its own: %s" % line)
        ok = False
    cluster.kill_all()
    if not ok:
        cluster.dump_logs()
    cluster.remove()
    print("%s: %.0f s" % (name, time.monotonic() - t0))
    if failures:
        print("%s: %d failures" % (name, len(failures)))
        return 1
    print("%s: all checks passed" % name)
    return 0


def wait_for(what, cond, timeout, interval=0.05):
    """Polls cond() until it returns a true value (returned) or raises TimeoutError after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise TimeoutError("timed out after %.1f s waiting for %s" % (timeout, what))
        time.sleep(interval)


def lanes_args():
    """The lane count of the run (WEIR_CLUSTER_LANES, set by the ctest entries named *_lanes): every
    node gets --raft-lanes N (docs/replication.md, "Lanes"); none when unset."""
    lanes = os.environ.get("WEIR_CLUSTER_LANES")
    return ["--raft-lanes", lanes] if lanes else []


def subscription_group(key, groups=64, lanes=None):
    """The raft group of a subscription (root + id): one of lane 0's groups 0, L, 2L, ...
    (src/server/replication.cc subscription_group_of; fnv_group with one lane)."""
    lanes = lanes if lanes is not None else int(os.environ.get("WEIR_CLUSTER_LANES", "1"))
    return fnv_group(key, (groups + lanes - 1) // lanes) * lanes


def lane_views(st):
    """A node's /cluster view per lane: the top level is lane 0's (with every lane's raft_groups,
    groups_led and quorum), other_lanes the others' own views."""
    return [st] + st.get("other_lanes", [])


def summed(st, key):
    """The object `key` of a /cluster view (fork_references, stream_data, admission, ...) with its
    numbers added up over the node's lanes."""
    out = {}
    for view in lane_views(st):
        for k, v in view[key].items():
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                out.setdefault(k, v)
            else:
                out[k] = out.get(k, 0) + v
    return out


def lane_of_group(group, lanes=None):
    """The lane that runs `group` on every node."""
    lanes = lanes if lanes is not None else int(os.environ.get("WEIR_CLUSTER_LANES", "1"))
    return group % lanes


class Cluster:
    """Three nodes in a fresh temporary directory. `peers_for(node_id, peer_ports)` may give a node a
    --peers list of its own (through proxies); by default every node gets the direct addresses."""

    def __init__(self, weir, extra=(), peers_for=None, peer_ports=None, size=3, prefix="weir-cluster-"):
        self.weir = weir
        self.extra = list(extra) + lanes_args()
        self.workdir = tempfile.mkdtemp(prefix=prefix)
        self.peer_ports = peer_ports or {i: free_port() for i in range(1, size + 1)}
        direct = ",".join("%d=%s:%d" % (i, HOST, p) for i, p in sorted(self.peer_ports.items()))
        self.nodes = {}
        for i, p in self.peer_ports.items():
            self.nodes[i] = Node(self, i, p, peers_for(i, self.peer_ports) if peers_for else direct)

    def node(self, i):
        return self.nodes[i]

    def start(self, ids=None):
        ids = ids or sorted(self.nodes)
        for i in ids:
            self.nodes[i].start(wait=False)
        for i in ids:
            self.nodes[i].wait_listening()

    def wait_all_leaders(self, via, timeout=30):
        """Every group has a leader in node `via`'s view."""

        def ok():
            st = self.nodes[via].status()
            return st is not None and all(g["leader"] != 0 for g in st["raft_groups"]) and st

        return wait_for("every group of node %d to have a leader" % via, ok, timeout)

    def wait_healthy(self, ids=None, timeout=30):
        """Every node in `ids` has quorum, and they agree on every group's leader."""
        ids = ids or sorted(self.nodes)

        def ok():
            leaders = None
            for i in ids:
                st = self.nodes[i].status()
                if st is None or not st["quorum"]:
                    return False
                mine = [g["leader"] for g in st["raft_groups"]]
                if 0 in mine or (leaders is not None and mine != leaders):
                    return False
                leaders = mine
            return True

        wait_for("nodes %s to agree on a leader for every group" % ids, ok, timeout)

    def wait_caught_up(self, laggard, timeout=30):
        """Node `laggard` applied, in every group, at least what every other live node had committed
        when the wait began."""
        target = {}
        for i, n in self.nodes.items():
            if i == laggard or not n.alive():
                continue
            st = n.status()
            if st is None:
                continue
            for g in st["raft_groups"]:
                target[g["group"]] = max(target.get(g["group"], 0), g["commit_index"])

        def ok():
            st = self.nodes[laggard].status()
            if st is None:
                return False
            return all(g["applied_index"] >= target.get(g["group"], 0) for g in st["raft_groups"])

        try:
            wait_for("node %d to apply what the others committed" % laggard, ok, timeout)
        except TimeoutError:
            st = self.nodes[laggard].status() or {"raft_groups": []}
            print("node %d behind: %s" % (laggard, [(g["group"], g["applied_index"], target.get(g["group"], 0))
                                                  for g in st["raft_groups"]
                                                  if g["applied_index"] < target.get(g["group"], 0)]), flush=True)
            raise

    def stop_all(self):
        """SIGTERM every node; a dict node -> exit status (None: killed after the grace time)."""
        for n in self.nodes.values():
            if n.alive():
                n.stopping = True
                if n.paused:
                    n.resume()
                os.kill(n.proc.pid, signal.SIGTERM)
        return {i: n.stop() for i, n in self.nodes.items()}

    def kill_all(self):
        for n in self.nodes.values():
            try:
                n.kill()
            except OSError:
                pass

    def unexpected_exits(self):
        """Nodes that exited without the test stopping them: 'node N (pid P): status S' (a negative
        status is the signal that ended it, e.g. -11 SIGSEGV)."""
        out = []
        for i, n in sorted(self.nodes.items()):
            if n.proc is not None and not n.stopping and n.proc.poll() is not None:
                out.append("node %d (pid %d): status %d" % (i, n.proc.pid, n.proc.returncode))
        return out

    def dump_logs(self, lines=40):
        for line in self.unexpected_exits():
            print("exited on its own:", line)
        for n in self.nodes.values():
            for path, text in n.logs():
                print("---- %s (last %d lines)" % (path, lines))
                print("".join(text.splitlines(True)[-lines:]), end="")

    def grep_logs(self, pattern):
        """Lines of every node's logs that match `pattern` (a regex)."""
        rx = re.compile(pattern)
        out = []
        for n in self.nodes.values():
            for path, text in n.logs():
                out += ["%s: %s" % (os.path.basename(path), line) for line in text.splitlines() if rx.search(line)]
        return out

    def remove(self):
        shutil.rmtree(self.workdir, ignore_errors=True)


class LinkProxy:
    """A TCP proxy from 127.0.0.1:`port` to 127.0.0.1:`target`, forwarding both ways. cut() closes
    every forwarded connection and closes new ones at once (the link is down: the nodes redial);
    stall() keeps the connections but moves no byte (a black hole: what was sent arrives after
    restore(), unless TCP gives up first); restore() lets everything through again."""

    def __init__(self, target):
        self.target = target
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind((HOST, 0))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.lock = threading.Lock()
        self.conns = set()
        self.down = False
        self.closed = False
        self.flowing = threading.Event()
        self.flowing.set()
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            with self.lock:
                if self.down or self.closed:
                    _close(c)
                    continue
            try:
                up = socket.create_connection((HOST, self.target), timeout=5)
                up.settimeout(None)
            except OSError:
                _close(c)
                continue
            for s in (c, up):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.lock:
                if self.down or self.closed:
                    _close(c)
                    _close(up)
                    continue
                self.conns.add(c)
                self.conns.add(up)
                self.accepted += 1
            threading.Thread(target=self._pump, args=(c, up), daemon=True).start()
            threading.Thread(target=self._pump, args=(up, c), daemon=True).start()

    def _pump(self, src, dst):
        carried = 0
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                self.flowing.wait()
                if self.closed:
                    break
                dst.sendall(data)
                carried += len(data)
                self._forwarded(dst, carried)
        except OSError:
            pass
        with self.lock:
            self.conns.discard(src)
            self.conns.discard(dst)
        _close(src)
        _close(dst)

    def _forwarded(self, dst, carried):
        """Called by a connection's pump after each piece it forwarded to `dst`, with the bytes it has
        carried that way so far (a hook for tests' proxies)."""

    def cut(self):
        with self.lock:
            self.down = True
            conns, self.conns = self.conns, set()
        for s in conns:
            _close(s)

    def stall(self):
        self.flowing.clear()

    def restore(self):
        with self.lock:
            self.down = False
        self.flowing.set()

    def close(self):
        with self.lock:
            self.closed = True
        self.flowing.set()
        self.cut()
        _close(self.lsock)


def _close(s):
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        s.close()
    except OSError:
        pass

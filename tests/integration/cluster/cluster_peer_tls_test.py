"""A 3-node weir cluster whose peer links are mutual TLS (label: integration).

Certificates are made with the openssl command as docs/operations.md ("Cluster") tells an operator to:
a cluster CA, and for node N a certificate naming weir-node-N (subjectAltName DNS), for TLS server and
client use. Then:
  1. a node with peer-tls-cert but not the other two, and a node with another node's certificate, do
     not start (the reason names the setting);
  2. the three nodes start with peer-tls-cert/-key/-ca, elect leaders, and GET /cluster shows every
     peer link up with peer_tls enabled and nothing refused;
  3. streams written through a follower of their group read back the same from every node;
  4. the peer port refuses a plain TCP hello, `openssl s_client` without a client certificate (the
     node's certificate_required alert), and a client certificate from another CA; each refusal is
     counted in GET /cluster (peer_tls.refused);
  5. the cluster still serves afterwards;
  6. SIGHUP makes node 1 load a new certificate (logged with its serial), and a restarted peer links up
     with it; every node stops cleanly on SIGTERM.

Usage: cluster_peer_tls_test.py WEIR_BINARY
"""
import http.client
import os
import signal
import socket
import struct
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_support as cs  # noqa: E402
from cluster_support import check, failures  # noqa: E402

OCTET = {"Content-Type": "application/octet-stream"}


def openssl(*args, cwd):
    r = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError("openssl %s: %s" % (" ".join(args), r.stderr.decode(errors="replace")))


def make_ca(d, name):
    """NAME.pem / NAME.key: a self-signed CA (the default openssl.cnf marks it CA:TRUE)."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", name + ".key", "-out", name + ".pem", "-days", "30", "-subj", "/CN=" + name, cwd=d)


def make_node_cert(d, ca, leaf, node_id):
    """LEAF.crt / LEAF.key for node `node_id`, signed by CA (docs/operations.md, "Cluster")."""
    with open(os.path.join(d, leaf + ".ext"), "w") as f:
        f.write("subjectAltName=DNS:weir-node-%d\n" % node_id)
        f.write("extendedKeyUsage=serverAuth,clientAuth\n")
        f.write("keyUsage=critical,digitalSignature\n")
        f.write("basicConstraints=critical,CA:FALSE\n")
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", leaf + ".key", "-out", leaf + ".csr", "-subj", "/CN=weir-node-%d" % node_id, cwd=d)
    openssl("x509", "-req", "-in", leaf + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
            "-CAcreateserial", "-days", "30", "-extfile", leaf + ".ext", "-out", leaf + ".crt", cwd=d)


def tls_args(d, leaf, ca="ca"):
    return ["--peer-tls-cert", os.path.join(d, leaf + ".crt"), "--peer-tls-key", os.path.join(d, leaf + ".key"),
            "--peer-tls-ca", os.path.join(d, ca + ".pem")]


def refuses_to_start(cluster, node, extra, words):
    """`weir serve` as `node` (on fresh ports, a data directory of its own) with `extra` exits at once
    with an error containing `words`."""
    port = cs.free_port()
    peers = ",".join(("%d=%s:%d" % (node.id, cs.HOST, port)) if p.startswith("%d=" % node.id) else p
                     for p in node.peers_arg.split(","))
    args = [cluster.weir, "serve", "--listen", "%s:0" % cs.HOST, "--data-dir",
            os.path.join(cluster.workdir, "refused-%d" % port), "--node-id", str(node.id),
            "--peer-listen", "%s:%d" % (cs.HOST, port), "--peers", peers, *cluster.extra, *extra]
    try:
        r = subprocess.run(args, capture_output=True, timeout=30)
    except subprocess.TimeoutExpired:
        check(False, "weir serve %s did not exit" % extra)
        return
    out = (r.stdout + r.stderr).decode(errors="replace")
    check(r.returncode != 0 and words in out,
          "weir serve with %s: status %d, expected an error with %r:\n%s" % (extra, r.returncode, words, out[-2000:]))


def peer_tls(node):
    st = node.status()
    return st["peer_tls"] if st else None


def refused(node):
    t = peer_tls(node)
    return t["refused"] if t else -1


def hello(node_id):
    """A peer hello in the peer-link version 1 layout: "weirpeer", u32 version 1, u64 id, CRC32C. The hello
    is version 3 today (docs/replication-formats.md, "Peer-link hello and frames"), but this test sends it only to
    a node that refuses the connection at the TLS layer (plain TCP, or a handshake without a certificate
    from the cluster CA) before it reads any hello, so the version does not matter here."""
    h = b"weirpeer" + struct.pack("<IQ", 1, node_id)
    return h + struct.pack("<I", crc32c(h))


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def closed_by_node(sock, timeout=10):
    """True once the node closed the connection (end of stream or reset) within `timeout` s."""
    sock.settimeout(timeout)
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def s_client(port, d, extra):
    """`openssl s_client` to the peer port, sending a hello once connected; its output (stdout and
    stderr). -ign_eof: it stays until the node ends the session."""
    args = ["openssl", "s_client", "-connect", "%s:%d" % (cs.HOST, port), "-CAfile", os.path.join(d, "ca.pem"),
            "-verify_return_error", "-ign_eof", *extra]
    try:
        r = subprocess.run(args, input=hello(2), capture_output=True, timeout=20)
    except subprocess.TimeoutExpired as e:
        return "TIMEOUT " + ((e.stdout or b"") + (e.stderr or b"")).decode(errors="replace")
    return (r.stdout + r.stderr).decode(errors="replace")


def read_all(node, path):
    st, hdrs, body = cs.request(node.port, "GET", path + "?offset=-1")
    if st != 200:
        raise RuntimeError("GET %s on node %d: %d %r" % (path, node.id, st, body[:200]))
    return body


def main():
    weir = sys.argv[1]
    t0 = time.monotonic()
    cluster = cs.Cluster(weir, ["--threads", "2"], prefix="weir-peer-tls-")
    d = os.path.join(cluster.workdir, "certs")
    os.makedirs(d)
    ok = False
    error = None
    try:
        make_ca(d, "ca")
        make_ca(d, "other-ca")
        for i in (1, 2, 3):
            make_node_cert(d, "ca", "node%d" % i, i)
        make_node_cert(d, "other-ca", "stranger1", 1)
        print("certificates made: %.1f s" % (time.monotonic() - t0), flush=True)

        # 1. Misconfigurations stop the start.
        n1 = cluster.node(1)
        refuses_to_start(cluster, n1, ["--peer-tls-cert", os.path.join(d, "node1.crt")],
                         "missing: peer-tls-key, peer-tls-ca")
        refuses_to_start(cluster, n1, tls_args(d, "node2"), "not weir-node-1")
        refuses_to_start(cluster, n1, tls_args(d, "stranger1"), "does not verify against peer-tls-ca")

        # 2. Three nodes with mutual TLS.
        for i, n in sorted(cluster.nodes.items()):
            n.start(wait=False, extra=tls_args(d, "node%d" % i))
        for n in cluster.nodes.values():
            n.wait_listening()
        cluster.wait_healthy(timeout=30)
        for i, n in sorted(cluster.nodes.items()):
            st = n.status()
            check(st["peer_tls"] == {"enabled": True, "refused": 0}, "node %d: peer_tls %s" % (i, st["peer_tls"]))
            for p in st["peers"]:
                check(p["out_connected"] and p["in_connected"] and p["tls_refused"] == 0,
                      "node %d: link to node %d: %s" % (i, p["node_id"], p))
        print("3 nodes up over TLS: %.1f s" % (time.monotonic() - t0), flush=True)

        # 3. Writes through a follower of each stream's group; reads from every node.
        leaders = [g["leader"] for g in cluster.node(1).status()["raft_groups"]]
        expected = {}
        for k in range(6):
            path = "/v1/stream/peer-tls-%d" % k
            leader = leaders[cs.fnv_group(path, len(leaders))]
            via = cluster.node(next(i for i in (1, 2, 3) if i != leader))
            st, _, body = cs.request(via.port, "PUT", path, headers=OCTET)
            check(st == 201, "PUT %s on node %d (leader %d): %d %r" % (path, via.id, leader, st, body[:200]))
            expected[path] = b""
            for r in range(20):
                rec = b"%d.%d;" % (k, r)
                st, _, body = cs.request(via.port, "POST", path, body=rec, headers=OCTET)
                if check(st in (200, 204), "append to %s on node %d: %d %r" % (path, via.id, st, body[:200])):
                    expected[path] += rec
        for path, want in expected.items():
            for i, n in sorted(cluster.nodes.items()):
                got = read_all(n, path)
                check(got == want, "%s on node %d: %d bytes, expected %d" % (path, i, len(got), len(want)))

        # 4. The peer port refuses what is not a cluster node with a certificate from the cluster CA.
        port = n1.peer_port
        before = refused(n1)
        with socket.create_connection((cs.HOST, port), timeout=5) as s:
            s.sendall(hello(2) + struct.pack("<IBI", 3, 1, crc32c(b"abc")) + b"abc")
            check(closed_by_node(s), "a plain TCP hello was not closed by the node")
        cs.wait_for("node 1 to count the plain hello", lambda: refused(n1) >= before + 1, 10)

        before = refused(n1)
        out = s_client(port, d, [])
        check("certificate required" in out, "s_client without a certificate: no certificate_required alert:\n"
              + out[-1500:])
        cs.wait_for("node 1 to count s_client without a certificate", lambda: refused(n1) >= before + 1, 10)

        before = refused(n1)
        out = s_client(port, d, ["-cert", os.path.join(d, "stranger1.crt"), "-key", os.path.join(d, "stranger1.key")])
        check("unknown ca" in out or "certificate verify failed" in out or "bad certificate" in out,
              "s_client with another CA's certificate was not refused:\n" + out[-1500:])
        cs.wait_for("node 1 to count the other CA's certificate", lambda: refused(n1) >= before + 1, 10)
        print("refused: plain hello, no certificate, another CA: %.1f s" % (time.monotonic() - t0), flush=True)

        # 5. The real links were not disturbed.
        for i, n in sorted(cluster.nodes.items()):
            for p in n.status()["peers"]:
                check(p["out_connected"] and p["in_connected"], "node %d: link to node %d down: %s"
                      % (i, p["node_id"], p))
        path = "/v1/stream/peer-tls-0"
        st, _, _ = cs.request(cluster.node(3).port, "POST", path, body=b"after;", headers=OCTET)
        check(st in (200, 204), "append after the refusals: %d" % st)
        for i, n in sorted(cluster.nodes.items()):
            check(read_all(n, path) == expected[path] + b"after;", "%s on node %d after the refusals" % (path, i))

        # 6. SIGHUP: node 1 takes a new certificate (new key, same CA) for new peer connections; node 2,
        # restarted, links up with it.
        make_node_cert(d, "ca", "node1-new", 1)
        for ext in ("crt", "key"):
            os.replace(os.path.join(d, "node1-new." + ext), os.path.join(d, "node1." + ext))
        r = subprocess.run(["openssl", "x509", "-in", os.path.join(d, "node1.crt"), "-noout", "-serial"],
                           capture_output=True, text=True, check=True)
        serial = r.stdout.strip().split("=", 1)[1]
        n1.signal(signal.SIGHUP)
        cs.wait_for("node 1 to load its new peer certificate",
                    lambda: any("peer TLS certificate" in line and serial in line
                                for _, text in n1.logs() for line in text.splitlines()), 10)
        n2 = cluster.node(2)
        check(n2.stop() == 0, "node 2 did not stop cleanly")
        n2.start(extra=tls_args(d, "node2"))
        cluster.wait_healthy(timeout=30)

        def linked():
            st = n1.status()
            return st is not None and all(p["out_connected"] and p["in_connected"] for p in st["peers"])

        cs.wait_for("node 1's links up after the reload", linked, 15)
        check(read_all(n2, path) == expected[path] + b"after;", "%s on node 2 after the reload" % path)
        print("SIGHUP: new certificate, node 2 linked again: %.1f s" % (time.monotonic() - t0), flush=True)

        codes = cluster.stop_all()
        check(all(c == 0 for c in codes.values()), "SIGTERM: exit statuses %s (None: killed)" % codes)
        ok = not failures
    except (RuntimeError, TimeoutError, OSError, KeyError, TypeError, http.client.HTTPException) as e:
        error = e
    finally:
        status = cs.conclude("cluster_peer_tls", cluster, ok, t0, error)
    return status


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.exit(main())

#!/usr/bin/env python3
"""Memory per idle keep-alive connection, plain HTTP against HTTPS: RSS of `weir serve` (one thread) before
and after 1,000 connections that each made one request and stay open. Certificates (P-256) are made here.

    bench/tls/idle_conns.py [WEIR_BINARY] [N]
"""
import re
import socket
import ssl
import subprocess
import sys
import tempfile
import time

WEIR = sys.argv[1] if len(sys.argv) > 1 else "build/release/src/app/weir"
N = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
PORT = 18130


def rss_kib(pid):
    return int(re.search(r"VmRSS:\s+(\d+)", open(f"/proc/{pid}/status").read()).group(1))


def make_certs(d):
    def run(*a):
        subprocess.run(a, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
        f"{d}/ca.key", "-out", f"{d}/ca.pem", "-days", "2", "-subj", "/CN=weir bench CA")
    run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
        f"{d}/leaf.key", "-out", f"{d}/leaf.csr", "-subj", "/CN=127.0.0.1")
    with open(f"{d}/ext", "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
    run("openssl", "x509", "-req", "-in", f"{d}/leaf.csr", "-CA", f"{d}/ca.pem", "-CAkey", f"{d}/ca.key",
        "-set_serial", "0x42", "-days", "2", "-extfile", f"{d}/ext", "-out", f"{d}/leaf.pem")


def main():
    d = tempfile.mkdtemp(prefix="weir-tls-idle.")
    make_certs(d)
    ctx = ssl.create_default_context(cafile=f"{d}/ca.pem")
    for mode in ("plain", "tls"):
        args = [WEIR, "serve", "--listen", f"127.0.0.1:{PORT}", "--threads", "1", "--durable", "false",
                "--data-dir", f"{d}/data-{mode}", "--log-level", "warn"]
        if mode == "tls":
            args += ["--tls-cert", f"{d}/leaf.pem", "--tls-key", f"{d}/leaf.key"]
        p = subprocess.Popen(args)
        try:
            for _ in range(200):
                try:
                    socket.create_connection(("127.0.0.1", PORT)).close()
                    break
                except OSError:
                    time.sleep(0.05)  # polling for the listener to come up

            def one():
                s = socket.create_connection(("127.0.0.1", PORT))
                if mode == "tls":
                    s = ctx.wrap_socket(s, server_hostname="127.0.0.1")
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                data = b""
                while not data.endswith(b"ok\n"):
                    data += s.recv(4096)
                return s

            keep = [one() for _ in range(20)]  # warm: pools, first handshake's allocations
            time.sleep(0.5)
            base = rss_kib(p.pid)
            keep += [one() for _ in range(N)]
            time.sleep(0.5)
            after = rss_kib(p.pid)
            print(f"{mode}: RSS {base} -> {after} KiB for {N} idle keep-alive connections: "
                  f"{(after - base) * 1024 / N:.0f} bytes each")
            for s in keep:
                s.close()
        finally:
            p.terminate()
            p.wait()
    subprocess.run(["rm", "-rf", d])


main()

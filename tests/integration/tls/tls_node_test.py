#!/usr/bin/env python3
"""`weir serve --tls-cert/--tls-key` as an operator meets it, through the weir binary.

Certificates are made here with the openssl CLI (a self-signed CA and leaves; the keys live only in a
temporary directory). Checks: start-up errors that name the file (a key that does not match the
certificate, a missing file, an expired certificate); HTTPS only on the listen address (plaintext HTTP
is closed, the node stays healthy); SIGHUP with new files: a new connection sees the new certificate's
serial while an open keep-alive connection goes on; a create's Location says https; SIGHUP with a broken pair keeps the certificate in
force; SIGTERM stops the node cleanly.

Usage: tls_node_test.py WEIR_BINARY
"""
import http.client
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

WEIR = sys.argv[1]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_certs(d):
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem", "-days", "2", "-subj", "/CN=weir test CA")
    with open(f"{d}/ext", "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                "extendedKeyUsage=serverAuth\n")
    for name, serial, days in (("a", "0x1001", "2"), ("b", "0x2002", "2"), ("old", "0x3003", "-1")):
        run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f"{d}/{name}.key", "-out", f"{d}/{name}.csr", "-subj", "/CN=127.0.0.1")
        run("openssl", "x509", "-req", "-in", f"{d}/{name}.csr", "-CA", f"{d}/ca.pem", "-CAkey",
            f"{d}/ca.key", "-set_serial", serial, "-days", days, "-extfile", f"{d}/ext", "-out",
            f"{d}/{name}.crt")


def start_fails(d, cert, key, needle):
    p = subprocess.run([WEIR, "serve", "--listen", "127.0.0.1:0", "--durable", "false", "--data-dir",
                        f"{d}/data-fail", "--tls-cert", cert, "--tls-key", key],
                       capture_output=True, text=True, timeout=30)
    out = p.stdout + p.stderr
    check(p.returncode != 0, f"start-up refused ({needle})")
    check(needle in out, f"the error names {needle}: {out.strip()[-300:]}")


def wait_log(path, pattern, after=0, limit=10.0):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        with open(path) as f:
            text = f.read()
        m = re.search(pattern, text[after:])
        if m:
            return m
        time.sleep(0.05)  # polling the node's log for a line: no other event to wait on
    return None


def client_context(ca):
    ctx = ssl.create_default_context(cafile=ca)
    return ctx


def serial_of(port, ca):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        with client_context(ca).wrap_socket(s, server_hostname="127.0.0.1") as t:
            return t.getpeercert()["serialNumber"], t.version(), t.selected_alpn_protocol()


def main():
    d = tempfile.mkdtemp(prefix="weir-tls-node.")
    proc = None
    try:
        make_certs(d)
        ca = f"{d}/ca.pem"
        start_fails(d, f"{d}/a.crt", f"{d}/b.key", f"{d}/b.key")          # key of another certificate
        start_fails(d, f"{d}/missing.crt", f"{d}/a.key", f"{d}/missing.crt")
        start_fails(d, f"{d}/old.crt", f"{d}/old.key", "expired")
        start_fails(d, f"{d}/old.crt", f"{d}/old.key", f"{d}/old.crt")

        shutil.copy(f"{d}/a.crt", f"{d}/live.crt")
        shutil.copy(f"{d}/a.key", f"{d}/live.key")
        log = f"{d}/weir.log"
        with open(log, "w") as out:
            proc = subprocess.Popen([WEIR, "serve", "--listen", "127.0.0.1:0", "--durable", "false",
                                     "--data-dir", f"{d}/data", "--tls-cert", f"{d}/live.crt", "--tls-key",
                                     f"{d}/live.key"], stdout=out, stderr=subprocess.STDOUT)
        m = wait_log(log, r"listening on 127\.0\.0\.1:(\d+) \(https")
        check(m is not None, "the node logs that it listens with https")
        if m is None:
            return
        port = int(m.group(1))

        serial, version, alpn = serial_of(port, ca)
        check(serial == "1001", f"first certificate served (serial {serial})")
        check(version == "TLSv1.3" and alpn is None, f"TLS 1.3 ({version}), no ALPN asked, none forced")

        old = http.client.HTTPSConnection("127.0.0.1", port, context=client_context(ca), timeout=5)
        old.request("GET", "/healthz")
        r = old.getresponse()
        check(r.status == 200 and r.read() == b"ok\n", "GET /healthz over HTTPS")
        old.request("PUT", "/v1/stream/tls-made", headers={"Content-Type": "text/plain"})
        r = old.getresponse()
        r.read()
        location = r.getheader("Location") or ""
        check(r.status == 201 and location == f"https://127.0.0.1:{port}/v1/stream/tls-made",
              f"a create over HTTPS answers 201 with an https Location ({location})")

        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            try:
                data = s.recv(4096)
            except ConnectionResetError:
                data = b""
            check(b"HTTP/1.1 200" not in data, "plaintext HTTP on the HTTPS port gets no answer")

        shutil.copy(f"{d}/b.crt", f"{d}/live.crt")
        shutil.copy(f"{d}/b.key", f"{d}/live.key")
        mark = os.path.getsize(log)
        proc.send_signal(signal.SIGHUP)
        check(wait_log(log, r"SIGHUP: reloaded TLS certificate .*serial 2002", mark) is not None,
              "SIGHUP reloads the new certificate (logged)")
        serial, _, _ = serial_of(port, ca)
        check(serial == "2002", f"a new connection sees the new certificate (serial {serial})")
        old.request("GET", "/healthz")
        r = old.getresponse()
        check(r.status == 200 and r.read() == b"ok\n", "the keep-alive connection from before the reload works")
        old.close()

        shutil.copy(f"{d}/a.key", f"{d}/live.key")  # now the pair does not match
        mark = os.path.getsize(log)
        proc.send_signal(signal.SIGHUP)
        check(wait_log(log, r"SIGHUP: tls-key .* does not match .*previous certificate stays", mark) is not None,
              "a broken pair on SIGHUP is refused (logged)")
        serial, _, _ = serial_of(port, ca)
        check(serial == "2002", f"the certificate in force stays (serial {serial})")

        proc.send_signal(signal.SIGTERM)
        check(proc.wait(timeout=15) == 0, "SIGTERM stops the node with status 0")
        proc = None
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
        shutil.rmtree(d, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print("tls_node: all checks passed")


main()

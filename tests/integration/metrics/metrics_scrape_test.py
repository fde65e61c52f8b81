"""GET /metrics of a real `weir serve`, parsed back with prometheus_client's text parser.

Makes known requests over raw sockets (and one read over h2c with curl) (so that the bytes each one sent and received are known
exactly), scrapes before and after, and checks that every counter moved by exactly what was done:
requests by operation and status, errors by class, bytes in and out, latency histogram counts,
live readers, streams, the write-ahead log's batches and fsyncs, webhook deliveries. Then stops the node and reads the
JSON access log back: one line per request, paths without their query strings (a token sent in a
query must not appear anywhere in the log). A second node with --metrics false answers /metrics 404.

Usage: metrics_scrape_test.py WEIR_BINARY
"""
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from prometheus_client.parser import text_string_to_metric_families

WEIR = sys.argv[1]
failures = []
checks = [0]


def check(cond, what):
    checks[0] += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


class Node:
    def __init__(self, workdir, *flags):
        os.makedirs(workdir, exist_ok=True)
        self.log_path = os.path.join(workdir, "serve.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [WEIR, "serve", "--listen", "127.0.0.1:0", "--data-dir", os.path.join(workdir, "data"),
             "--threads", "2", "--log-format", "json", *flags],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.port = None
        deadline = time.monotonic() + 20
        while self.port is None:  # waits for the line that names the port (bounded)
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("weir serve did not start: " + open(self.log_path).read())
            with open(self.log_path) as f:
                m = re.search(r"listening on 127\.0\.0\.1:(\d+)", f.read())
            if m:
                self.port = int(m.group(1))
            else:
                time.sleep(0.02)  # polling a child's log file: there is no event to wait on

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=30)
        self.log.close()
        return code


def exchange(port, raw, head=False):
    """Sends one request (bytes) on a new connection; returns (status, headers, body, bytes received)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(raw)
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        head_end = buf.index(b"\r\n\r\n") + 4
        head_text = buf[:head_end].decode()
        status = int(head_text.split(" ", 2)[1])
        headers = {}
        for line in head_text.split("\r\n")[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        if head or status in (204, 304):
            return status, headers, b"", head_end
        if headers.get("transfer-encoding") == "chunked":
            while not buf.endswith(b"0\r\n\r\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
            return status, headers, buf[head_end:], len(buf)
        length = int(headers.get("content-length", "0"))
        while len(buf) < head_end + length:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        return status, headers, buf[head_end:head_end + length], len(buf)


def request(method, path, body=b"", headers=()):
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
    lines += [f"{k}: {v}" for k, v in headers]
    if body or method in ("POST", "PUT"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def scrape(port):
    status, headers, body, _ = exchange(port, request("GET", "/metrics"))
    check(status == 200, f"/metrics status {status}")
    check(headers.get("content-type", "").startswith("text/plain; version=0.0.4"),
          f"/metrics content type {headers.get('content-type')}")
    samples = {}
    families = {}
    for fam in text_string_to_metric_families(body.decode()):
        families[fam.name] = fam
        for s in fam.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples, families


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def delta(before, after, name, **labels):
    return value(after, name, **labels) - value(before, name, **labels)


def histogram_is_consistent(samples, name, **labels):
    """Buckets cumulative, ending at +Inf == _count."""
    buckets = []
    for (n, lab), v in samples.items():
        d = dict(lab)
        if n == name + "_bucket" and all(d.get(k) == val for k, val in labels.items()):
            buckets.append((float(d["le"]), v))
    buckets.sort()
    if not buckets or buckets[-1][0] != float("inf"):
        return False
    counts = [v for _, v in buckets]
    return counts == sorted(counts) and counts[-1] == value(samples, name + "_count", **labels)


def main():
    work = tempfile.mkdtemp(prefix="weir-metrics-")
    try:
        access = os.path.join(work, "access.log")
        node = Node(work, "--access-log", access, "--long-poll-timeout-ms", "100",
                    "--allow-loopback-webhooks", "true")
        port = node.port
        before, families = scrape(port)
        for fam in ("weir_http_requests", "weir_http_request_duration_seconds", "weir_log_fsync_duration_seconds",
                    "weir_streams", "weir_hot_bytes", "weir_log_segment_bytes", "weir_live_readers",
                    "weir_http_connections_open", "weir_producers"):
            check(fam in families, f"family {fam} in the scrape")
        check(families["weir_http_request_duration_seconds"].type == "histogram", "latency is a histogram")
        check(value(before, "process_resident_memory_bytes") > 0 and value(before, "process_open_fds") > 0,
              "process figures")
        started = value(before, "process_start_time_seconds")
        check(time.time() - 60 < started <= time.time() + 1, f"process start time {started} is about now")

        sent = {"append": 0}
        got = {"append": 0}
        st, _, _, _ = exchange(port, request("PUT", "/v1/stream/m1", headers=[("Content-Type", "text/plain")]))
        check(st == 201, f"create {st}")
        for i in range(3):
            raw = request("POST", "/v1/stream/m1", f"record-{i}".encode(),
                          [("Content-Type", "text/plain"), ("Producer-Id", "p1"), ("Producer-Epoch", "0"),
                           ("Producer-Seq", str(i))])
            st, _, _, n = exchange(port, raw)
            check(st in (200, 204), f"append {st}")
            sent["append"] += len(raw)
            got["append"] += n
        st, _, _, _ = exchange(port, request("POST", "/v1/stream/m1", b"",
                                             [("Content-Type", "text/plain"), ("Stream-Closed", "true")]))
        check(st in (200, 204), f"close {st}")
        st, _, body, _ = exchange(port, request("GET", "/v1/stream/m1?offset=-1&access_token=SECRET-TOKEN"))
        check(st == 200 and body == b"record-0record-1record-2", f"read {st} {body!r}")
        st, _, _, _ = exchange(port, request("GET", "/v1/stream/absent"))
        check(st == 404, f"read of an absent stream {st}")
        st, _, _, _ = exchange(port, request("HEAD", "/v1/stream/m1"), head=True)
        check(st == 200, f"head {st}")
        st, _, _, _ = exchange(port, request("PUT", "/v1/stream/m2", headers=[("Content-Type", "text/plain")]))
        check(st == 201, f"create m2 {st}")
        st, _, _, _ = exchange(port, request("GET", "/v1/stream/m2?offset=now&live=long-poll"))
        check(st == 204, f"long-poll timeout {st}")
        st, _, _, _ = exchange(port, request("DELETE", "/v1/stream/m2"))
        check(st in (200, 204), f"delete {st}")

        # One read over HTTP/2 (h2c, prior knowledge): counted as a connection and a stream, and its
        # access log line names the protocol.
        h2_before, _ = scrape(port)
        out = subprocess.run(["curl", "-sS", "--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{http_version} %{http_code}",
                              f"http://127.0.0.1:{port}/v1/stream/m1?offset=-1"],
                             capture_output=True, text=True, timeout=30)
        check(out.stdout == "2 200", f"h2c read: {out.stdout!r} {out.stderr!r}")
        h2_after, _ = scrape(port)
        check(delta(h2_before, h2_after, "weir_http2_connections_total") == 1
              and delta(h2_before, h2_after, "weir_http2_streams_total") == 1, "one h2 connection and stream counted")

        # A long-poll in progress shows as a live reader until data arrives.
        st, _, _, _ = exchange(port, request("PUT", "/v1/stream/m3", headers=[("Content-Type", "text/plain")]))
        waiter = socket.create_connection(("127.0.0.1", port), timeout=10)
        waiter.sendall(request("GET", "/v1/stream/m3?offset=now&live=long-poll"))
        deadline = time.monotonic() + 10
        live = 0
        while time.monotonic() < deadline:  # until the node has the request (state, not time)
            live = value(scrape(port)[0], "weir_live_readers", kind="long_poll")
            if live == 1:
                break
        check(live == 1, f"one long-poll reader in progress, saw {live}")
        st, _, _, _ = exchange(port, request("POST", "/v1/stream/m3", b"wake", [("Content-Type", "text/plain")]))
        check(st in (200, 204), f"append to m3 {st}")
        check(waiter.recv(65536).startswith(b"HTTP/1.1 200"), "the long-poll got the data")
        waiter.close()

        after, _ = scrape(port)
        expect = [
            ("weir_http_requests_total", dict(op="create", code="201"), 3),
            ("weir_http_requests_total", dict(op="close", code="204"), 1),
            ("weir_http_requests_total", dict(op="read", code="200"), 2),  # one over h2c
            ("weir_http_requests_total", dict(op="read", code="404"), 1),
            ("weir_http_requests_total", dict(op="head", code="200"), 1),
            ("weir_http_requests_total", dict(op="long_poll", code="204"), 1),
            ("weir_http_requests_total", dict(op="long_poll", code="200"), 1),
            ("weir_http_request_errors_total", dict(op="read", **{"class": "4xx"}), 1),
            ("weir_http_request_duration_seconds_count", dict(op="create"), 3),
            ("weir_http_request_duration_seconds_count", dict(op="long_poll"), 2),
            ("weir_http_request_bytes_total", dict(op="append"), sent["append"] + len(
                request("POST", "/v1/stream/m3", b"wake", [("Content-Type", "text/plain")]))),
        ]
        for name, labels, want in expect:
            got_delta = delta(before, after, name, **labels)
            check(got_delta == want, f"{name}{labels} moved by {got_delta}, expected {want}")
        appends = delta(before, after, "weir_http_requests_total", op="append", code="204") + \
            delta(before, after, "weir_http_requests_total", op="append", code="200")
        check(appends == 4, f"4 appends counted, saw {appends}")
        deletes = sum(delta(before, after, "weir_http_requests_total", op="delete", code=c) for c in ("200", "204"))
        check(deletes == 1, f"1 delete counted, saw {deletes}")
        out_append = delta(before, after, "weir_http_response_bytes_total", op="append")
        check(out_append >= got["append"], f"append response bytes {out_append} >= {got['append']}")
        check(value(after, "weir_live_readers", kind="long_poll") == 0, "no long-poll left")
        check(value(after, "weir_streams") == 2, f"2 streams, saw {value(after, 'weir_streams')}")
        check(value(after, "weir_producers") == 1, f"1 producer, saw {value(after, 'weir_producers')}")
        check(value(after, "weir_hot_bytes") >= len(b"record-0record-1record-2wake"), "hot bytes")
        check(value(after, "weir_log_segment_bytes") > 0 and value(after, "weir_log_segments") >= 2, "segments")
        check(delta(before, after, "weir_log_records_total") >= 9, "log records")
        check(value(after, "weir_log_batch_records_count") == value(after, "weir_log_batches_total"),
              "one batch-size observation per batch")
        check(value(after, "weir_log_fsync_duration_seconds_count") == value(after, "weir_log_fsyncs_total"),
              "one fsync duration per fsync")
        check(delta(before, after, "weir_http_connections_accepted_total") >= 14, "connections accepted")
        for name, labels in (("weir_http_request_duration_seconds", dict(op="create")),
                             ("weir_log_fsync_duration_seconds", {}), ("weir_log_batch_records", {})):
            check(histogram_is_consistent(after, name, **labels), f"{name}{labels} buckets cumulative to +Inf")

        # Webhook deliveries: one target answers 200, the other port refuses connections.
        hits = []

        class Hook(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                hits.append(self.path)
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        target = http.server.HTTPServer(("127.0.0.1", 0), Hook)
        threading.Thread(target=target.serve_forever, daemon=True).start()
        sub = json.dumps({"type": "webhook", "pattern": "events/*",
                          "webhook": {"url": f"http://127.0.0.1:{target.server_port}/hook"}}).encode()
        st, _, body, _ = exchange(port, request("PUT", "/v1/stream/__ds/subscriptions/hooked", sub,
                                                [("Content-Type", "application/json")]))
        check(st == 201, f"webhook subscription {st} {body!r}")
        st, _, _, _ = exchange(port, request("PUT", "/v1/stream/events/e1", headers=[("Content-Type", "text/plain")]))
        check(st == 201, f"create events/e1 {st}")
        st, _, _, _ = exchange(port, request("POST", "/v1/stream/events/e1", b"x", [("Content-Type", "text/plain")]))
        check(st in (200, 204), f"append events/e1 {st}")
        deadline = time.monotonic() + 20
        ok = 0
        while time.monotonic() < deadline:  # until the node has seen the target's answer (state)
            ok = value(scrape(port)[0], "weir_subscription_deliveries_total", result="ok")
            if ok >= 1:
                break
        check(ok >= 1 and hits, f"a webhook delivery answered 200 is counted ok ({ok}, target saw {len(hits)})")
        target.shutdown()
        final, _ = scrape(port)
        check(value(final, "weir_subscriptions") == 1, "one subscription")
        check(delta(after, final, "weir_http_requests_total", op="subscriptions", code="201") == 1,
              "the subscription PUT is counted as op subscriptions")

        code = node.stop()
        check(code == 0, f"weir serve exited with {code}")
        with open(access, "rb") as f:
            text = f.read()
        check(b"SECRET-TOKEN" not in text and b"access_token" not in text, "no query string in the access log")
        lines = [json.loads(line) for line in text.decode().splitlines()]
        paths = [(ln["method"], ln["path"], ln["status"]) for ln in lines]
        for want in (("PUT", "/v1/stream/m1", 201), ("GET", "/v1/stream/m1", 200), ("GET", "/v1/stream/absent", 404),
                     ("HEAD", "/v1/stream/m1", 200), ("DELETE", "/v1/stream/m2", 204), ("GET", "/metrics", 200)):
            check(want in paths, f"access log line {want}")
        h2_lines = [ln for ln in lines if ln["protocol"] == "HTTP/2"]
        check(len(h2_lines) == 1 and h2_lines[0]["path"] == "/v1/stream/m1",
              f"the h2c read is the one HTTP/2 line: {h2_lines}")
        check(all(ln["protocol"] == "HTTP/1.1" for ln in lines if ln not in h2_lines), "the others say HTTP/1.1")
        check(all(ln["client"] == "127.0.0.1" and ln["bytes"] > 0 and ln["duration_s"] >= 0 and ln["ts"].endswith("Z")
                  for ln in lines), "every access log line has client, bytes, duration and time")
        # Every request answered before the last scrape is counted in it; the last scrape is logged too.
        answered = sum(v for (n, _), v in final.items() if n == "weir_http_requests_total")
        check(len(lines) == answered + 1, f"one line per request: {len(lines)} lines, {answered} + 1 requests")

        off = Node(os.path.join(work, "off"), "--metrics", "false")
        st, _, _, _ = exchange(off.port, request("GET", "/metrics"))
        check(st == 404, f"/metrics with --metrics false: {st}")
        check(off.stop() == 0, "the node without metrics stopped cleanly")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"metrics_scrape: {len(failures)} checks failed")
        sys.exit(1)
    print(f"metrics_scrape: all {checks[0]} checks passed")


if __name__ == "__main__":
    main()

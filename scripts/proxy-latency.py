#!/usr/bin/env python3
"""What ctxd's HTTP front door adds: latency to the first and the last streamed byte,
observe and manage mode, against a scripted upstream on 127.0.0.1; and the daemon's
peak memory while it forwards (and records) a 10 MB streamed answer.

    scripts/proxy-latency.py [CTXD_BIN] [N]

CTXD_BIN defaults to target/release/ctxd (build it with `cargo build --release -p ctxd`);
N calls per mode (default 300). Each call extends one conversation by a user message, as
an agent's loop does. Reports p50/p99 of each distribution, direct and through ctxd.
"""

import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/ctxd"
N = int(sys.argv[2]) if len(sys.argv) > 2 else 300
BIG = 10 * 1024 * 1024


def sse(events):
    return b"".join(
        f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events
    )


def answer_events(text_pieces):
    yield {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
           "model": "claude-test", "content": [], "stop_reason": None, "stop_sequence": None,
           "usage": {"input_tokens": 10, "output_tokens": 1}}}
    yield {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    for p in text_pieces:
        yield {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}
    yield {"type": "content_block_stop", "index": 0}
    yield {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
           "usage": {"output_tokens": 5}}
    yield {"type": "message_stop"}


SMALL = list(answer_events(["Hi"]))


class Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def setup(self):
        super().setup()
        # As API front ends do: with Nagle on, each small event after the head waits for
        # an ACK that a pooled (keep-alive) connection delays by 40 ms, which a new
        # connection per call (the direct runs) never sees.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        if body.get("max_tokens") == 99999:
            piece = "x" * 1_000
            events = answer_events([piece] * (BIG // len(piece)))
        else:
            events = SMALL
        for e in events:
            data = sse([e])
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def call(host, port, path, body, headers):
    conn = http.client.HTTPConnection(host, port)
    t0 = time.perf_counter()
    conn.request("POST", path, body=body, headers=headers)
    r = conn.getresponse()
    r.read(1)
    t1 = time.perf_counter()
    rest = r.read()
    t2 = time.perf_counter()
    assert r.status == 200, (r.status, rest[:200])
    conn.close()
    return (t1 - t0) * 1000, (t2 - t0) * 1000


def run(host, port, path, extra):
    msgs = [{"role": "user", "content": "start"}]
    first, last = [], []
    for i in range(N):
        body = json.dumps({"model": "claude-test", "max_tokens": 64, "stream": True, "messages": msgs})
        a, b = call(host, port, path, body, {"content-type": "application/json", "x-api-key": "k",
                                               "anthropic-version": "2023-06-01", **extra})
        first.append(a)
        last.append(b)
        msgs = msgs + [{"role": "assistant", "content": [{"type": "text", "text": "Hi"}]},
                       {"role": "user", "content": f"turn {i}"}]
    return first, last


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))]


def report(name, first, last):
    print(f"{name:24} first byte p50 {pct(first, 50):6.2f} ms p99 {pct(first, 99):6.2f} ms | "
          f"last byte p50 {pct(last, 50):6.2f} ms p99 {pct(last, 99):6.2f} ms")


def rss(pid, field):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field):
            return int(line.split()[1])
    return 0


def main():
    up = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=up.serve_forever, daemon=True).start()
    up_port = up.server_address[1]
    with tempfile.TemporaryDirectory() as tmp:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        sock = os.path.join(tmp, "ctxd.sock")
        d = subprocess.Popen([BIN, "--home", os.path.join(tmp, "home"), "--socket", sock,
                              "--http", f"127.0.0.1:{port}",
                              "--upstream-anthropic", f"http://127.0.0.1:{up_port}"],
                             stderr=subprocess.DEVNULL)
        try:
            secret = None
            for _ in range(500):
                try:
                    secret = open(os.path.join(tmp, "home", "proxy-secret")).read().strip()
                    socket.create_connection(("127.0.0.1", port)).close()
                    break
                except OSError:
                    time.sleep(0.02)
            report("direct", *run("127.0.0.1", up_port, "/v1/messages", {}))
            report("ctxd observe", *run("127.0.0.1", port, f"/{secret}/v1/messages",
                                        {"x-ctxd-session": "observe"}))
            report("direct", *run("127.0.0.1", up_port, "/v1/messages", {}))
            report("ctxd manage", *run("127.0.0.1", port, f"/{secret}/v1/messages",
                                       {"x-ctxd-session": "manage", "x-ctxd-mode": "manage"}))
            before = rss(d.pid, "VmRSS:")
            body = json.dumps({"model": "claude-test", "max_tokens": 99999, "stream": True,
                               "messages": [{"role": "user", "content": "big"}]})
            _, ms = call("127.0.0.1", port, f"/{secret}/v1/messages", body,
                         {"content-type": "application/json", "x-api-key": "k"})
            print(f"10 MB streamed answer: {ms:.0f} ms; ctxd RSS before {before} KiB, "
                  f"peak (VmHWM) {rss(d.pid, 'VmHWM:')} KiB, after {rss(d.pid, 'VmRSS:')} KiB")
        finally:
            d.terminate()
            d.wait()


if __name__ == "__main__":
    main()

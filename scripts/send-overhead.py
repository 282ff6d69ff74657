#!/usr/bin/env python3
"""ctxd's own share of a `context.send` turn, and its memory while an answer streams.

    scripts/send-overhead.py SOCKET [--session FILE.jsonl] [--turns 20] [--answer-mb 1] [--stream]

Imports FILE (default: the largest bundled Claude Code fixture) into a running daemon,
points the session at a local scripted Messages API, and runs TURNS turns. For each it
takes four instants: the client's call, the first request byte at the provider, the
provider's last answer byte, the client's answer. It prints the medians of ctxd's part
before the provider (call -> request) and after it (last byte -> answer). Then one turn
whose answer is ANSWER_MB megabytes of streamed text, with the daemon's peak resident
memory during it (sampled from /proc every millisecond). Standard library only, but
with --stream, which runs every turn through `context.send_stream` over a WebSocket
with the repository's Python package (it needs `websockets`): the answer instant is
then the `finished` event's arrival.
"""

import argparse
import json
import os
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from rpc_http import call

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests/fixtures/claude-code/viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
KEY_VAR = "CTXD_OVERHEAD_KEY"


STATE = {"answer_chars": 20, "received": [], "sent": []}


def turn(sock, sid, stream):
    """One turn; with `stream`, through context.send_stream, reading every event."""
    if not stream:
        return call(sock, "context.send", session_id=sid)
    import sys

    sys.path.insert(0, str(ROOT / "clients" / "python"))
    import ctxd_client

    last = None
    for last in ctxd_client.Client(sock).send_stream(sid):
        pass
    if last is None or last["kind"] != "finished":
        raise SystemExit(f"the streamed turn did not finish: {last}")
    return last["response"]


def events(text):
    start = {"type": "message_start", "message": {"id": "msg_o", "type": "message", "role": "assistant",
             "model": "claude-sonnet-4-5", "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {"input_tokens": 1000, "output_tokens": 1}}}
    out = [start, {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}]
    for i in range(0, len(text), 4096):
        out.append({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text[i:i + 4096]}})
    out += [{"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}},
            {"type": "message_stop"}]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in out).encode()


class Provider(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        STATE["received"].append(time.time())
        self.rfile.read(int(self.headers["content-length"]))
        body = events("x" * STATE["answer_chars"])
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        STATE["sent"].append(time.time())


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    ap.add_argument("--session", default=str(FIXTURE))
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--answer-mb", type=float, default=1.0)
    ap.add_argument("--stream", action="store_true", help="turns through context.send_stream")
    a = ap.parse_args()
    status = call(a.socket, "daemon.status")
    if os.environ.get(KEY_VAR) is None:
        print(f"note: the daemon needs {KEY_VAR} in its environment")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    provider = {"kind": "anthropic", "base_url": f"http://127.0.0.1:{server.server_address[1]}",
                "api_key_env": KEY_VAR, "max_retries": 0}
    imported = call(a.socket, "session.import", jsonl=Path(a.session).read_text(), cwd="/tmp")
    sid = imported["session"]["session_id"] if "session" in imported else imported["session_id"]
    call(a.socket, "session.update", session_id=sid, settings={"provider": provider, "autocompact": False})
    before, after = [], []
    for i in range(a.turns):
        call(a.socket, "transcript.append", session_id=sid, records=[{"type": "user", "content": f"turn {i}"}])
        t0 = time.time()
        turn(a.socket, sid, a.stream)
        t1 = time.time()
        before.append(STATE["received"][-1] - t0)
        after.append(t1 - STATE["sent"][-1])
    ms = lambda xs: f"{statistics.median(xs) * 1000:.2f} ms (min {min(xs) * 1000:.2f}, max {max(xs) * 1000:.2f})"
    how = "context.send_stream" if a.stream else "context.send"
    print(f"session {Path(a.session).name}: {imported.get('stats', {}).get('records', '?')} records, {a.turns} turns ({how})")
    print(f"  ctxd before the provider (call -> first request byte): {ms(before)}")
    print(f"  ctxd after the provider (last answer byte -> answer):  {ms(after)}")
    STATE["answer_chars"] = int(a.answer_mb * 1_000_000)
    call(a.socket, "transcript.append", session_id=sid, records=[{"type": "user", "content": "a long answer"}])
    peak, base, done = [0], rss_kib(status["pid"]), threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], rss_kib(status["pid"]))
            time.sleep(0.001)

    sampler = threading.Thread(target=sample)
    sampler.start()
    turn(a.socket, sid, a.stream)
    done.set()
    sampler.join()
    print(f"  a {a.answer_mb:g} MB streamed answer: RSS {base / 1024:.0f} MiB before, peak {peak[0] / 1024:.0f} MiB during")
    call(a.socket, "session.delete", session_id=sid)


if __name__ == "__main__":
    main()

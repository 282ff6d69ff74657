#!/usr/bin/env python3
"""Drive the real Claude Code in print mode against a scripted Messages API, offline.

Usage: scripts/claude-code-probe.py OUT_DIR [--input-tokens N] [--prompt TEXT] [--model M]

Claude Code comes from the test cache (CTXD_TEST_CACHE or ~/.cache/ctxd-test/claude-code,
installed there with `npm install @anthropic-ai/claude-code` when missing). It runs in a
fresh HOME and CLAUDE_CONFIG_DIR under OUT_DIR, in a project folder holding NOTES.md, with
ANTHROPIC_BASE_URL pointing at a local server that answers: first a Read of NOTES.md, then
a short text naming what the result said. The usage each answer reports is scripted
(`--input-tokens`, split between cache reads and writes), so what Claude Code does at a
given size can be observed.

Kept in OUT_DIR: `transcript.jsonl` (the session's transcript as Claude Code wrote it),
`requests/NNN.json` (every request body it sent, in order, with its path and headers),
`transcript.redacted.jsonl` (the same with every long prose string replaced by its
length, what a test fixture may hold), `stdout.txt`, `stderr.txt`, `version.txt`. A black-box reference: nothing of Claude Code's
own code or texts is copied into the project from here.
"""

import argparse
import glob
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading

CACHE = os.environ.get("CTXD_TEST_CACHE") or os.path.expanduser("~/.cache/ctxd-test")
CC_DIR = os.path.join(CACHE, "claude-code")
CLAUDE = os.path.join(CC_DIR, "node_modules/.bin/claude")
# Bounds: a probe never waits forever nor keeps an unbounded body.
TIMEOUT_S = 180
MAX_BODY = 32 << 20


def install():
    if os.path.exists(CLAUDE):
        return
    os.makedirs(CC_DIR, exist_ok=True)
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error",
         "@anthropic-ai/claude-code"],
        cwd=CC_DIR, check=True, timeout=600)


def version():
    with open(os.path.join(CC_DIR, "node_modules/@anthropic-ai/claude-code/package.json")) as f:
        return json.load(f)["version"]


def sse(events):
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def make_handler(state):
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_HEAD(self):
            self.send_response(200)
            self.end_headers()

        def do_GET(self):
            self.send_response(404)
            self.end_headers()

        def do_POST(self):
            n = int(self.headers.get("content-length") or 0)
            if n > MAX_BODY:
                self.send_response(413)
                self.end_headers()
                return
            raw = self.rfile.read(n)
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            with state["lock"]:
                state["seq"] += 1
                seq = state["seq"]
            with open(os.path.join(state["requests"], f"{seq:03}.json"), "w") as f:
                json.dump({"path": self.path,
                           "headers": {k.lower(): v for k, v in self.headers.items()
                                       if k.lower() not in ("x-api-key", "authorization")},
                           "body": body}, f, indent=1)
            if not self.path.startswith("/v1/messages") or not isinstance(body, dict):
                self.send_response(404)
                self.end_headers()
                return
            if self.path.startswith("/v1/messages/count_tokens"):
                return self.json({"input_tokens": state["input_tokens"]})
            self.answer(body, seq)

        def json(self, value):
            data = json.dumps(value).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def answer(self, body, seq):
            tools = [t.get("name") for t in body.get("tools") or []]
            msgs = body.get("messages") or []
            last = msgs[-1] if msgs else {}
            content = last.get("content") if isinstance(last.get("content"), list) else []
            result = next((b for b in content if b.get("type") == "tool_result"), None)
            if "Read" in tools and result is None:
                blocks = [{"type": "text", "text": "Reading the notes."},
                          {"type": "tool_use", "id": f"toolu_probe_{seq}", "name": "Read",
                           "input": {"file_path": state["notes"]}}]
                stop = "tool_use"
            else:
                text = json.dumps(result.get("content")) if result else ""
                word = "pineapple" if "pineapple" in text else "nothing"
                blocks = [{"type": "text", "text": f"The notes say {word}."}]
                stop = "end_turn"
            total = state["input_tokens"]
            usage = {"input_tokens": 3, "cache_creation_input_tokens": total // 10,
                     "cache_read_input_tokens": total - 3 - total // 10,
                     "output_tokens": 12}
            message = {"id": f"msg_probe_{seq}", "type": "message", "role": "assistant",
                       "model": body.get("model", "claude-probe"), "content": blocks,
                       "stop_reason": stop, "stop_sequence": None, "usage": usage}
            if body.get("stream") is not True:
                return self.json(message)
            start = dict(message, content=[], stop_reason=None,
                         usage=dict(usage, output_tokens=1))
            events = [{"type": "message_start", "message": start}]
            for i, b in enumerate(blocks):
                if b["type"] == "text":
                    events += [
                        {"type": "content_block_start", "index": i,
                         "content_block": {"type": "text", "text": ""}},
                        {"type": "content_block_delta", "index": i,
                         "delta": {"type": "text_delta", "text": b["text"]}}]
                else:
                    events += [
                        {"type": "content_block_start", "index": i,
                         "content_block": dict(b, input={})},
                        {"type": "content_block_delta", "index": i,
                         "delta": {"type": "input_json_delta",
                                   "partial_json": json.dumps(b["input"])}}]
                events.append({"type": "content_block_stop", "index": i})
            events += [{"type": "message_delta",
                        "delta": {"stop_reason": stop, "stop_sequence": None},
                        "usage": {"output_tokens": usage["output_tokens"]}},
                       {"type": "message_stop"}]
            data = sse(events)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


# Strings this long with a space in them are prose: Claude Code's own system prompt,
# tool descriptions, listings and reminders. Replaced in the redacted copy, so a fixture
# made from a probe keeps the records' structure and none of those texts. The lines of
# the conversation itself (the probe's prompt, the scripted answers) are ours and kept.
PROSE = 24
OURS = ("user", "assistant", "queue-operation", "last-prompt")


def redact(value, key=None):
    if isinstance(value, str):
        if key == "description" or (len(value) > PROSE and " " in value):
            return f"[{len(value)} characters of Claude Code's text]"
        return value
    if isinstance(value, list):
        return [redact(v) for v in value]
    if isinstance(value, dict):
        return {k: redact(v, k) for k, v in value.items()}
    return value


def redact_line(line):
    if line.get("type") in OURS:
        return line
    return redact(line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--input-tokens", type=int, default=12000)
    ap.add_argument("--prompt", default="What does NOTES.md say the secret fruit is?")
    ap.add_argument("--model", default=None, help="passed to claude --model")
    args = ap.parse_args()
    install()
    out = os.path.abspath(args.out)
    if os.path.exists(out):
        shutil.rmtree(out)
    home, project, requests = (os.path.join(out, d) for d in ("home", "project", "requests"))
    for d in (home, project, requests):
        os.makedirs(d)
    notes = os.path.join(project, "NOTES.md")
    with open(notes, "w") as f:
        f.write("The secret fruit is pineapple.\n")
    state = {"lock": threading.Lock(), "seq": 0, "requests": requests, "notes": notes,
             "input_tokens": args.input_tokens}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": home,
        "CLAUDE_CONFIG_DIR": os.path.join(home, ".claude"),
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{server.server_port}",
        "ANTHROPIC_API_KEY": "sk-ant-probe-dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    argv = [CLAUDE, "-p", args.prompt, "--allowedTools", "Read"]
    if args.model:
        argv += ["--model", args.model]
    run = subprocess.run(argv,
                         cwd=project, env=env, stdin=subprocess.DEVNULL,
                         capture_output=True, timeout=TIMEOUT_S)
    server.shutdown()
    for name, data in (("stdout.txt", run.stdout), ("stderr.txt", run.stderr)):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    with open(os.path.join(out, "version.txt"), "w") as f:
        f.write(version() + "\n")
    found = sorted(glob.glob(os.path.join(home, ".claude/projects/*/*.jsonl")),
                   key=os.path.getsize)
    if not found:
        sys.exit(f"claude exited {run.returncode} and wrote no transcript; see {out}/stderr.txt")
    shutil.copy(found[-1], os.path.join(out, "transcript.jsonl"))
    with open(found[-1]) as src, open(os.path.join(out, "transcript.redacted.jsonl"), "w") as dst:
        for line in src:
            try:
                dst.write(json.dumps(redact_line(json.loads(line)), ensure_ascii=False,
                                     separators=(",", ":")) + "\n")
            except ValueError:
                dst.write(line)
    kinds = {}
    with open(found[-1]) as f:
        for line in f:
            try:
                t = json.loads(line).get("type")
            except ValueError:
                t = "(not JSON)"
            kinds[t] = kinds.get(t, 0) + 1
    print(json.dumps({"version": version(), "exit": run.returncode,
                      "requests": state["seq"], "record_kinds": kinds}))


if __name__ == "__main__":
    main()

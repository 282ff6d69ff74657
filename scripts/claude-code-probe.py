#!/usr/bin/env python3
"""Drive the real Claude Code (print mode or a terminal) against a scripted API, offline.

Usage: scripts/claude-code-probe.py OUT_DIR [--input-tokens N] [--prompt TEXT] [--model M]
                                      [--env KEY=VALUE ...] [--interactive]
                                      [--bisect LO HI [--step S] [--bisect-on compaction|refusal]]

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

`--env KEY=VALUE` (repeatable) adds a variable to Claude Code's environment, e.g.
`CLAUDE_CODE_MAX_OUTPUT_TOKENS=8000`. The summary printed at the end names the automatic
compactions seen (`compactions`, with each boundary's `preTokens`) and the `max_tokens`
the Messages requests asked for, so whether a limit was honoured shows in the output.

`--interactive` runs the same conversation in an interactive session instead of print
mode: Claude Code in a terminal (a pty, with the `pexpect` Python module), its first-run
questions answered beforehand in the fresh HOME's config, stopped once its requests have
been quiet for a few seconds. Its screen is kept in `screen.txt`; `exit` is then -1.

`--bisect LO HI` finds the smallest reported input in [LO, HI] at which Claude Code
compacts, to within `--step` tokens (1,000 by default): one probe per step, each kept in
OUT_DIR/N, and a last line `{"threshold": ...}` giving the largest input seen without a
compaction and the smallest seen with one. It assumes LO does not compact and HI does,
and checks both first. With `--bisect-on refusal` it looks instead for the smallest input
at which Claude Code stops without compacting and exits non-zero (its blocking limit,
e.g. with `--env DISABLE_AUTO_COMPACT=1`).
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
import time

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


# An interactive session never exits by itself: it is stopped once no request has come
# for this long after the first answers.
QUIET_S = 6


def run_interactive(out, home, project, prompt, model, env, state):
    """The conversation in a terminal; returns -1 (the session is stopped, not ended)."""
    import pexpect

    key = env["ANTHROPIC_API_KEY"]
    # The first-run questions (theme, API key, trusting the folder) would otherwise wait
    # for answers the probe cannot give.
    config = {"hasCompletedOnboarding": True, "theme": "dark",
              "customApiKeyResponses": {"approved": [key[-20:]], "rejected": []},
              "projects": {project: {"hasTrustDialogAccepted": True,
                                     "hasCompletedProjectOnboarding": True}}}
    os.makedirs(env["CLAUDE_CONFIG_DIR"], exist_ok=True)
    for path in (os.path.join(home, ".claude.json"),
                 os.path.join(env["CLAUDE_CONFIG_DIR"], ".claude.json")):
        with open(path, "w") as f:
            json.dump(config, f)
    argv = [prompt, "--allowedTools", "Read"] + (["--model", model] if model else [])
    child = pexpect.spawn(CLAUDE, argv, cwd=project, env=dict(env, TERM="xterm-256color"),
                          dimensions=(50, 160), encoding="utf-8", codec_errors="replace")
    with open(os.path.join(out, "screen.txt"), "w") as screen:
        child.logfile_read = screen
        deadline = time.monotonic() + TIMEOUT_S
        seen, quiet = 0, 0
        while time.monotonic() < deadline and quiet < QUIET_S:
            try:
                child.expect(pexpect.TIMEOUT, timeout=1)
            except pexpect.EOF:
                break
            quiet = quiet + 1 if state["seq"] == seen and seen >= 2 else 0
            seen = state["seq"]
        child.sendcontrol("c")
        time.sleep(0.5)
        child.sendcontrol("c")
        time.sleep(1)
        child.close(force=True)
    return -1


def probe(out, input_tokens, prompt, model, extra_env, interactive=False):
    """One run of Claude Code at a reported input; returns the summary."""
    if os.path.exists(out):
        shutil.rmtree(out)
    home, project, requests = (os.path.join(out, d) for d in ("home", "project", "requests"))
    for d in (home, project, requests):
        os.makedirs(d)
    notes = os.path.join(project, "NOTES.md")
    with open(notes, "w") as f:
        f.write("The secret fruit is pineapple.\n")
    state = {"lock": threading.Lock(), "seq": 0, "requests": requests, "notes": notes,
             "input_tokens": input_tokens}
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
    env.update(extra_env)
    if interactive:
        returncode = run_interactive(out, home, project, prompt, model, env, state)
    else:
        argv = [CLAUDE, "-p", prompt, "--allowedTools", "Read"]
        if model:
            argv += ["--model", model]
        run = subprocess.run(argv,
                             cwd=project, env=env, stdin=subprocess.DEVNULL,
                             capture_output=True, timeout=TIMEOUT_S)
        returncode = run.returncode
        for name, data in (("stdout.txt", run.stdout), ("stderr.txt", run.stderr)):
            with open(os.path.join(out, name), "wb") as f:
                f.write(data)
    server.shutdown()
    server.server_close()
    with open(os.path.join(out, "version.txt"), "w") as f:
        f.write(version() + "\n")
    found = sorted(glob.glob(os.path.join(home, ".claude/projects/*/*.jsonl")),
                   key=os.path.getsize)
    if not found:
        sys.exit(f"claude exited {returncode} and wrote no transcript; see {out}")
    shutil.copy(found[-1], os.path.join(out, "transcript.jsonl"))
    with open(found[-1]) as src, open(os.path.join(out, "transcript.redacted.jsonl"), "w") as dst:
        for line in src:
            try:
                dst.write(json.dumps(redact_line(json.loads(line)), ensure_ascii=False,
                                     separators=(",", ":")) + "\n")
            except ValueError:
                dst.write(line)
    kinds = {}
    compactions = []
    with open(found[-1]) as f:
        for line in f:
            try:
                rec = json.loads(line)
            except ValueError:
                kinds["(not JSON)"] = kinds.get("(not JSON)", 0) + 1
                continue
            t = rec.get("type")
            kinds[t] = kinds.get(t, 0) + 1
            if t == "system" and rec.get("subtype") == "compact_boundary":
                meta = rec.get("compactMetadata") or {}
                compactions.append({"trigger": meta.get("trigger"),
                                    "preTokens": meta.get("preTokens")})
    asked = {}
    for path in sorted(glob.glob(os.path.join(requests, "*.json"))):
        with open(path) as f:
            body = (json.load(f) or {}).get("body")
        if isinstance(body, dict) and "max_tokens" in body:
            key = f"{body.get('model')}:{body.get('max_tokens')}"
            asked[key] = asked.get(key, 0) + 1
    return {"version": version(), "input_tokens": input_tokens, "exit": returncode,
            "requests": state["seq"], "max_tokens": asked,
            "compactions": compactions, "record_kinds": kinds}


def compacted(summary):
    return any(c.get("trigger") == "auto" for c in summary["compactions"])


def refused(summary):
    return summary["exit"] != 0 and not summary["compactions"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--input-tokens", type=int, default=12000)
    ap.add_argument("--prompt", default="What does NOTES.md say the secret fruit is?")
    ap.add_argument("--model", default=None, help="passed to claude --model")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                    help="added to Claude Code's environment (repeatable)")
    ap.add_argument("--bisect", nargs=2, type=int, metavar=("LO", "HI"),
                    help="find the smallest reported input in [LO, HI] that compacts")
    ap.add_argument("--interactive", action="store_true",
                    help="a session in a terminal instead of print mode")
    ap.add_argument("--step", type=int, default=1000)
    ap.add_argument("--bisect-on", choices=("compaction", "refusal"), default="compaction")
    args = ap.parse_args()
    if args.interactive and args.bisect_on == "refusal":
        ap.error("--bisect-on refusal needs print mode: an interactive session has no exit code")
    extra_env = {}
    for kv in args.env:
        key, sep, value = kv.partition("=")
        if not sep or not key:
            ap.error(f"--env wants KEY=VALUE, got {kv!r}")
        extra_env[key] = value
    install()
    out = os.path.abspath(args.out)

    def one(path, n):
        summary = probe(path, n, args.prompt, args.model, extra_env, args.interactive)
        print(json.dumps(summary), flush=True)
        return summary

    if not args.bisect:
        one(out, args.input_tokens)
        return
    lo, hi = args.bisect
    acted = compacted if args.bisect_on == "compaction" else refused
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    if acted(one(os.path.join(out, str(lo)), lo)):
        sys.exit(f"{args.bisect_on} already at LO={lo}")
    if not acted(one(os.path.join(out, str(hi)), hi)):
        sys.exit(f"no {args.bisect_on} at HI={hi}")
    while hi - lo > args.step:
        mid = (lo + hi) // 2
        mid -= mid % args.step if hi - lo > 2 * args.step else 0
        if mid <= lo or mid >= hi:
            mid = (lo + hi) // 2
        if acted(one(os.path.join(out, str(mid)), mid)):
            hi = mid
        else:
            lo = mid
    print(json.dumps({"threshold": {f"no_{args.bisect_on}_at": lo,
                                    f"{args.bisect_on}_at": hi},
                      "model": args.model, "env": extra_env, "version": version()}))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What a loaded session costs the daemon in memory, against the size of its transcript.

Usage: scripts/session-memory.py [FILE.jsonl] [--sessions N] [--ctx PATH] [--ctxd PATH]

FILE defaults to the largest fixture (tests/fixtures/claude-code/viewer/fe5e1c67-….jsonl);
N to 20. The transcript is imported N times into a daemon of its own in a temporary
--home; the daemon is then restarted, so that nothing is loaded, and each session is
compiled once, which loads it. Printed: the daemon's RSS (VmRSS) before and after the
loads, the growth of the first load (with what a first compile sets up once) and of each
further session, each against the file's size. The default paths are the release
builds (`cargo build --release -p ctxd -p ctx-cli`); `--ctx` and `--ctxd` name others.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LARGEST = os.path.join(
    ROOT, "tests/fixtures/claude-code/viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
)
# Bound on one command.
TIMEOUT_S = 300


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def main():
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    ap = argparse.ArgumentParser()
    ap.add_argument("file", nargs="?", default=LARGEST)
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--ctx", default=os.path.join(target, "release/ctx"))
    ap.add_argument("--ctxd", default=os.path.join(target, "release/ctxd"))
    a = ap.parse_args()
    if a.sessions < 1:
        sys.exit("--sessions must be at least 1")
    with tempfile.TemporaryDirectory() as tmp:
        home = os.path.join(tmp, "home")
        env = dict(os.environ, CTXD_HOME=home, CTXD_BIN=a.ctxd, HOME=os.path.join(tmp, "user"))
        env.pop("CTXD_SOCKET", None)

        def ctx(*args):
            out = subprocess.run(
                [a.ctx, *args], env=env, capture_output=True, text=True, timeout=TIMEOUT_S
            )
            if out.returncode != 0:
                sys.exit(f"ctx {' '.join(args)} failed: {out.stderr.strip()}")
            return out.stdout

        try:
            ids = []
            for _ in range(a.sessions):
                ids.append(json.loads(ctx("import", a.file, "--json"))["session_id"])
            ctx("daemon", "stop")
            pid = json.loads(ctx("daemon", "status", "--json"))["pid"]
            before = rss_kib(pid)
            rss = []
            for sid in ids:
                ctx("compile", sid)
                rss.append(rss_kib(pid))
            after = rss[-1]
            loaded = json.loads(ctx("daemon", "status", "--json"))["sessions"]
        finally:
            subprocess.run([a.ctx, "daemon", "stop"], env=env, capture_output=True, timeout=TIMEOUT_S)
    size = os.path.getsize(a.file)
    first = (rss[0] - before) * 1024
    print(f"transcript: {os.path.basename(a.file)}, {size:,} bytes")
    print(f"sessions loaded: {a.sessions} (daemon.status sessions: {loaded})")
    print(f"daemon RSS: {before:,} KiB before the loads, {rss[0]:,} KiB after the first, {after:,} KiB after all")
    print(f"the first load: {first / 1024:,.0f} KiB, {first / size:.2f}x the transcript (with what a first compile sets up once)")
    if a.sessions > 1:
        per = (after - rss[0]) * 1024 / (a.sessions - 1)
        print(f"each further session: {per / 1024:,.0f} KiB, {per / size:.2f}x the transcript")


if __name__ == "__main__":
    main()

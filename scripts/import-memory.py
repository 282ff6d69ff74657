#!/usr/bin/env python3
"""The daemon's peak memory while it imports a long Claude Code transcript.

    scripts/import-memory.py SOCKET PID [--mb 78] [--max-line BYTES] [--keep FILE] [--path]

Writes a transcript of about MB megabytes by repeating the bundled Claude Code
fixtures (every copy with fresh uuids and tool ids, so none is a duplicate of another;
with --max-line, only their lines up to that many bytes: many short lines), imports it into the daemon listening on SOCKET whose process is PID (its text in the
request, or with --path its path, which the daemon reads), and prints the
input's size, the daemon's resident memory before and its peak (VmHWM) after. Run it
on a fresh daemon: VmHWM is the process's peak since it started. Standard library only.
"""

import argparse
import json
import os
import re
import tempfile
import time
from pathlib import Path

from rpc_http import call

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests/fixtures/claude-code"
SOURCES = ["viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl", "spotter/subagent.jsonl",
           "spotter/tool_heavy.jsonl", "viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"]
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TOOL_ID = re.compile(r"\b(toolu_[A-Za-z0-9]+|call_[A-Za-z0-9]+)")


def copy(text, k):
    """`text` with every uuid and tool id made unique to copy `k`."""
    text = UUID.sub(lambda m: m.group(0)[:24] + f"{k:012x}", text)
    return TOOL_ID.sub(lambda m: f"{m.group(1)}x{k}", text)


def write(path, mb, max_line):
    base = "".join((FIXTURES / s).read_text() for s in SOURCES)
    base = "".join(l + "\n" for l in base.splitlines() if l.strip() and len(l) <= max_line)
    with open(path, "w") as f:
        k = 0
        while f.tell() < mb * 1_000_000:
            f.write(copy(base, k))
            k += 1


def status(pid, key):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) // 1024
    raise SystemExit(f"no {key} for {pid}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    ap.add_argument("pid", type=int)
    ap.add_argument("--mb", type=float, default=78)
    ap.add_argument("--max-line", type=int, default=1 << 30)
    ap.add_argument("--path", action="store_true", help="send the file's path, not its text")
    ap.add_argument("--keep", help="write the transcript here (and keep it)")
    a = ap.parse_args()
    path = a.keep or tempfile.mkstemp(suffix=".jsonl")[1]
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        write(path, a.mb, a.max_line)
    size = os.path.getsize(path)
    lines = sum(1 for _ in open(path))
    before = status(a.pid, "VmRSS")
    t = time.monotonic()
    source = {"path": os.path.abspath(path)} if a.path else {"jsonl": Path(path).read_text()}
    r = call(a.socket, "session.import", cwd="/tmp", **source)
    took = time.monotonic() - t
    peak = status(a.pid, "VmHWM")
    print(f"input {size / 1e6:.1f} MB, {lines} lines, {r['stats']['records']} records, {took:.1f} s")
    print(f"daemon RSS before {before} MiB, peak {peak} MiB: +{peak - before} MiB"
          f" ({(peak - before) * 1048576 / size:.1f}x the input)")
    if not a.keep:
        os.unlink(path)


if __name__ == "__main__":
    main()

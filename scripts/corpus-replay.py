#!/usr/bin/env python3
"""`ctx import` and `ctx replay --json` over every transcript of a corpus, one outcome per file.

Usage: scripts/corpus-replay.py [CORPUS_DIR] [--ctx PATH] [--out FILE.json]

CORPUS_DIR defaults to ../shared/fixtures/claude-code/corpus (the shared corpus of real
sessions); --ctx to target/release/ctx, else target/debug/ctx (CARGO_TARGET_DIR honoured).
Each file is imported and replayed against a daemon of its own in a temporary --home, so
nothing of the user's store is touched. Printed: a Markdown table (exit codes, warnings,
the estimator's p90 error, the window the replay took, ctxd's count against the source's
at each of its compactions and microcompactions, and how many automatic compactions
of versions >= 2.1.21 it counts within 1 %, over all of them and over those whose
history the file holds whole: a boundary right after a tool call whose result the file
never holds is named, since Claude Code counted that result); --out keeps every figure
as JSON. Exits 1 when any file's
import or replay did not exit 0.
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Bound on one command: the largest corpus file replays in seconds on a debug build.
TIMEOUT_S = 900


def default_ctx():
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    for profile in ("release", "debug"):
        p = os.path.join(target, profile, "ctx")
        if os.path.exists(p):
            return p
    sys.exit("no ctx binary: cargo build -p ctx-cli, or pass --ctx")


def run(cmd, home):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S,
                           env=dict(os.environ, CTXD_HOME=home))
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return "timeout", "", f"over {TIMEOUT_S} s"


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if isinstance(v, dict):
            return v
    return None


def one(ctx, path):
    with tempfile.TemporaryDirectory(prefix="corpus-replay-") as home:
        base = [ctx, "--home", home]
        out = {"file": os.path.basename(path)}
        rc, stdout, stderr = run(base + ["--json", "import", path], home)
        out["import_exit"] = rc
        imported = last_json(stdout) if rc == 0 else None
        if imported:
            out["import_warnings"] = imported.get("stats", {}).get("warnings", [])
            out["skipped"] = imported.get("stats", {}).get("skipped", {})
        elif rc != 0:
            out["import_error"] = stderr.strip()[-400:]
        rc, stdout, stderr = run(base + ["replay", "--json", path], home)
        out["replay_exit"] = rc
        summary = last_json(stderr) if rc == 0 else None
        steps = [json.loads(l) for l in stdout.splitlines() if l.startswith("{")]
        if summary is None:
            out["replay_error"] = stderr.strip()[-400:]
            return out
        out["warnings"] = summary.get("warnings", [])
        out["compiles"] = summary.get("compiles")
        out["p90_abs_error_pct"] = round(summary.get("p90_abs_error_pct", 0.0), 2)
        out["autocompact_threshold"] = steps[-1]["autocompact_threshold"] if steps else None
        out["largest_recorded_input"] = max(
            (s.get("actual_input_tokens") or 0 for s in steps), default=0)
        out["first_autocompact_line"] = next(
            (s["source_line"] for s in steps if s.get("autocompact")), None)
        out["ctxd_compactions"] = len(summary.get("compactions", []))
        out["version"] = version_of(path)
        out["source_boundaries"] = summary.get("source_boundaries", [])
        return out


def version_of(path):
    """The Claude Code version of the first line that names one."""
    with open(path, errors="replace") as f:
        for line in f:
            try:
                v = json.loads(line).get("version")
            except (ValueError, AttributeError):
                continue
            if v:
                return v
    return None


def unanswered_before(path, line):
    """The tool_use ids of the main chain, since the compaction boundary before `line`,
    that have no tool_result in the file before `line`: calls whose results Claude Code
    counted in its preTokens but did not write before the boundary."""
    used, answered = [], set()
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, text in enumerate(f, 1):
            if n >= line:
                break
            try:
                r = json.loads(text)
            except ValueError:
                continue
            if not isinstance(r, dict) or r.get("isSidechain"):
                continue
            if r.get("type") == "system" and r.get("subtype") == "compact_boundary":
                used, answered = [], set()
                continue
            m = r.get("message")
            content = m.get("content") if isinstance(m, dict) else None
            if not isinstance(content, list):
                continue
            for b in content:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "tool_use" and b.get("id"):
                    used.append(b["id"])
                elif b.get("type") == "tool_result" and b.get("tool_use_id"):
                    answered.add(b["tool_use_id"])
    return [u for u in used if u not in answered]


def at_least(version, floor):
    try:
        return tuple(int(x) for x in version.split(".")) >= floor
    except (AttributeError, ValueError):
        return False


def fmt_compactions(items):
    parts = []
    for c in items or []:
        micro = "micro " if c.get("kind") == "microcompact_boundary" else ""
        pre, ours = c.get("source_pre_tokens"), c.get("count_at_source_compaction")
        diff = c.get("difference_pct")
        note = f" ({diff:+.1f} %)" if diff is not None else (
            "" if c.get("history_in_file") else " (history not in the file)")
        parts.append(f"{micro}{c.get('trigger', '?')}:{pre} vs {ours}{note}")
    return "; ".join(parts) or "-"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", nargs="?",
                    default=os.path.join(os.path.dirname(ROOT), "shared/fixtures/claude-code/corpus"))
    ap.add_argument("--ctx", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    ctx = args.ctx or default_ctx()
    files = sorted(glob.glob(os.path.join(args.corpus, "*.jsonl")))
    if not files:
        sys.exit(f"no .jsonl under {args.corpus}")
    rows = []
    print("| file | version | import | replay | warnings | p90 % | threshold | largest input "
          "| first autocompact line | ctxd compactions | source compactions: preTokens vs ctxd |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for f in files:
        r = one(ctx, f)
        rows.append(r)
        print(f"| {r['file']} | {r.get('version')} | {r['import_exit']} | {r['replay_exit']} "
              f"| {len(r.get('warnings', []))} | {r.get('p90_abs_error_pct', '-')} "
              f"| {r.get('autocompact_threshold', '-')} | {r.get('largest_recorded_input', '-')} "
              f"| {r.get('first_autocompact_line') or '-'} | {r.get('ctxd_compactions', '-')} "
              f"| {fmt_compactions(r.get('source_boundaries'))} |", flush=True)
    # The measure: automatic compactions of versions from 2.1.21 on (earlier ones
    # reserved a larger buffer and anchored their count differently).
    autos = [(r, c) for r in rows for c in r.get("source_boundaries", [])
             if c.get("kind") == "compact_boundary" and c.get("trigger") == "auto"
             and c.get("difference_pct") is not None and at_least(r.get("version"), (2, 1, 21))]
    # A boundary right after a call whose result the file never holds cannot be counted
    # from the file: Claude Code counted that result in preTokens.
    for r, c in autos:
        c["unanswered_tool_uses"] = unanswered_before(
            os.path.join(args.corpus, r["file"]), c["source_line"])
    comparable = [x for x in autos if not x[1]["unanswered_tool_uses"]]
    close = [x for x in autos if abs(x[1]["difference_pct"]) <= 1.0]
    close_comparable = [x for x in comparable if abs(x[1]["difference_pct"]) <= 1.0]
    print(f"\nautomatic compactions of versions >= 2.1.21: {len(close)}/{len(autos)} "
          "counted within 1 % of the source's preTokens; "
          f"{len(close_comparable)}/{len(comparable)} of those whose history the file holds whole")
    for r, c in autos:
        lacks = c["unanswered_tool_uses"]
        note = f"; the file lacks the result of {', '.join(lacks)}" if lacks else ""
        print(f"  {r['file']} ({r['version']}) line {c['source_line']}: "
              f"{c['source_pre_tokens']} vs {c['count_at_source_compaction']} "
              f"({c['difference_pct']:+.2f} %){note}")
    failed = [r["file"] for r in rows if r["import_exit"] != 0 or r["replay_exit"] != 0]
    print(f"\n{len(rows) - len(failed)}/{len(rows)} files imported and replayed with exit 0")
    for r in rows:
        for w in r.get("warnings", []):
            print(f"warning: {r['file']}: {w}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The lean policy's frontier: simulated cost against premature clears, per setting.

Replays every real session under tests/fixtures/claude-code (the main threads and their
sub-agents), or the transcripts given, once under `claude_code` and once per
`settings.lean` variant, and prints, pooled over all of them: tokens sent, simulated cost
against recorded, results cleared and the premature-clear rate; `--per-session` adds one
line per transcript.

    python3 scripts/lean-frontier.py [--ctx target/release/ctx] [--grid quick|full|default]
                                     [--per-session] [FILE.jsonl | DIR ...]
"""

import argparse
import itertools
import json
import pathlib
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = sorted(
    p
    for d in ("spotter", "viewer")
    for p in (ROOT / "tests/fixtures/claude-code" / d).glob("*.jsonl")
)
SESSIONS = FIXTURES
PER_SESSION = False


def replay(ctx, home, policy, lean):
    totals = []
    for f in SESSIONS:
        args = [ctx, "--home", home, "replay", "--json", "--policy", policy]
        if lean is not None:
            args += ["--lean", json.dumps(lean)]
        run = subprocess.run(args + [str(f)], capture_output=True, text=True, check=True)
        totals.append(json.loads(run.stderr.strip().splitlines()[-1])["totals"])
        if PER_SESSION:
            t = totals[-1]
            rate = t["premature"] / t["cleared"] if t["cleared"] else 0.0
            print(f"    {f.name[:60]:<60} calls {t['calls']:4d}  "
                  f"cost {t['simulated_cost'] / t['recorded_cost']:6.3f}x  "
                  f"cleared {t['cleared']:4d} premature {t['premature']:3d} ({rate:5.1%})  "
                  f"compactions {t['compactions']}/{t['source_compactions']}")
    pooled = {k: sum(t[k] for t in totals) for k in
              ("calls", "tokens_sent", "simulated_cost", "recorded_cost", "cleared",
               "premature", "compactions", "source_compactions")}
    return pooled


def row(name, p, base):
    rate = p["premature"] / p["cleared"] if p["cleared"] else 0.0
    print(f"{name:<44} sent {p['tokens_sent'] / base['tokens_sent']:6.3f}x  "
          f"cost {p['simulated_cost'] / p['recorded_cost']:6.3f}x recorded  "
          f"cleared {p['cleared']:4d}  premature {p['premature']:3d} ({rate:5.1%})  "
          f"compactions {p['compactions']}/{p['source_compactions']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ctx", default=str(ROOT / "target/release/ctx"))
    ap.add_argument("--grid", choices=["quick", "full", "default"], default="quick")
    ap.add_argument("--per-session", action="store_true")
    ap.add_argument("paths", nargs="*", type=pathlib.Path)
    a = ap.parse_args()
    global SESSIONS, PER_SESSION
    PER_SESSION = a.per_session
    if a.paths:
        SESSIONS = sorted(f for p in a.paths for f in (p.glob("*.jsonl") if p.is_dir() else [p]))
    with tempfile.TemporaryDirectory() as home:
        base = replay(a.ctx, home, "claude_code", None)
        print(f"{len(SESSIONS)} transcripts, {base['calls']} model calls, "
              f"recorded ${base['recorded_cost']:.4f}")
        row("claude_code", base, base)
        if a.grid == "default":
            grid = [(12, 6, 300)]
        elif a.grid == "quick":
            grid = [(12, 6, r) for r in (50, 100, 200, 300)]
        else:
            grid = itertools.product((4, 8, 12, 1_000_000), (3, 6), (50, 100, 200, 300))
        for stale, keep, ratio in grid:
            lean = {"stale_after_rounds": stale, "keep_recent": keep,
                    "warm_min_ratio_pct": ratio}
            name = f"lean stale={stale if stale < 1_000_000 else 'off'} keep={keep} warm={ratio}%"
            row(name, replay(a.ctx, home, "lean", lean), base)


if __name__ == "__main__":
    main()

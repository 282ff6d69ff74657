#!/usr/bin/env python3
"""The lean policy's frontier: simulated cost against premature clears, per setting.

Replays every real session under tests/fixtures/claude-code (the main threads and their
sub-agents), or the transcripts given, once under `claude_code` and once per
`settings.lean` variant, and prints, pooled over all of them: tokens sent, simulated cost
against recorded and against `claude_code`'s simulated cost, results cleared, the
premature-clear rate and compactions against the source's; `--per-session` adds one line
per transcript.

    python3 scripts/lean-frontier.py [--ctx target/release/ctx]
                                     [--grid quick|full|default|touch|none]
                                     [--lean JSON ...] [--per-session] [FILE.jsonl | DIR ...]

`--grid touch` tries each point with `touch_by_use` off and on. `--lean` adds a point of
its own (a `settings.lean` object) after the grid's; with `--grid none`, only those.
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
    print(f"{name:<52} sent {p['tokens_sent'] / base['tokens_sent']:6.3f}x  "
          f"cost {p['simulated_cost'] / p['recorded_cost']:6.3f}x recorded "
          f"{p['simulated_cost'] / base['simulated_cost']:6.3f}x claude_code  "
          f"cleared {p['cleared']:4d}  premature {p['premature']:3d} ({rate:5.1%})  "
          f"compactions {p['compactions']}/{p['source_compactions']}", flush=True)


def name_of(lean):
    parts = []
    for k, v in lean.items():
        short = {"stale_after_rounds": "stale", "keep_recent": "keep",
                 "warm_min_ratio_pct": "warm"}.get(k, k)
        if k == "stale_after_rounds" and v >= 1_000_000:
            v = "off"
        parts.append(f"{short}={v}{'%' if k == 'warm_min_ratio_pct' else ''}")
    return "lean " + (" ".join(parts) or "(the defaults)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ctx", default=str(ROOT / "target/release/ctx"))
    ap.add_argument("--grid", choices=["quick", "full", "default", "touch", "none"],
                    default="quick")
    ap.add_argument("--lean", action="append", default=[], type=json.loads,
                    help="a settings.lean object to try as well")
    ap.add_argument("--per-session", action="store_true")
    ap.add_argument("paths", nargs="*", type=pathlib.Path)
    a = ap.parse_args()
    global SESSIONS, PER_SESSION
    PER_SESSION = a.per_session
    if a.paths:
        SESSIONS = sorted(f for p in a.paths for f in (p.glob("*.jsonl") if p.is_dir() else [p]))
    points = [{"stale_after_rounds": s, "keep_recent": k, "warm_min_ratio_pct": r}
              for s, k, r in GRIDS[a.grid]]
    if a.grid == "default":
        points = [{}]
    if a.grid == "touch":
        points = [dict(p, touch_by_use=t) for p in points for t in (False, True)]
    points += a.lean
    with tempfile.TemporaryDirectory() as home:
        # The replays start one daemon in `home`, which is stopped before `home` goes.
        try:
            base = replay(a.ctx, home, "claude_code", None)
            print(f"{len(SESSIONS)} transcripts, {base['calls']} model calls, "
                  f"recorded ${base['recorded_cost']:.4f}")
            row("claude_code", base, base)
            for lean in points:
                row(name_of(lean), replay(a.ctx, home, "lean", lean), base)
        finally:
            subprocess.run([a.ctx, "--home", home, "daemon", "stop"], capture_output=True)


GRIDS = {
    "none": [],
    "default": [],
    "quick": [(12, 6, r) for r in (50, 100, 200, 300)],
    "full": list(itertools.product((4, 8, 12, 1_000_000), (3, 6), (50, 100, 200, 300))),
    "touch": list(itertools.product((6, 12, 24, 48, 1_000_000), (6,), (100, 300))),
}


if __name__ == "__main__":
    main()

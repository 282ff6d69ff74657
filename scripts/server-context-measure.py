#!/usr/bin/env python3
"""What ctxd says of a long session before and after the provider clears tool results and
compacts it, against what the provider's usage says.

    scripts/server-context-measure.py SOCKET [--session FILE.jsonl]

Imports FILE (default: the largest bundled Claude Code fixture) into a running daemon with
`settings.provider_context_management` clearing tool uses past 30,000 input tokens (keeping
3). The provider's answers are simulated from the compiled request itself:

1. a response whose usage is the compiled request less the tool results the edit clears
   (every tool result but the last three, counted at four characters a token), with that
   figure in `context_management.applied_edits`;
2. a response that begins with a `compaction` block (the SDK's own `BetaMessage` dump in
   tests/fixtures/sdk/beta_compaction.json), whose usage is the compacted prompt.

After each it prints ctxd's estimate (`metadata.context.effective_tokens` and the anchor),
its cache prediction (predicted read, expected break) and what `context.usage` (`ctx
context`) reports, beside the usage the response carried. Standard library only.
"""

import argparse
import json
from pathlib import Path

from rpc_http import call

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests/fixtures/claude-code/viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
NOW = "2026-12-01T10:00:00Z"


def cleared_by_edit(request, keep=3):
    """Tokens of every tool result but the last `keep`, at four characters a token."""
    results = [b for m in request["messages"] if m["role"] == "user" and isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]
    old = results[:-keep] if keep else results
    return sum(len(json.dumps(b.get("content", ""))) for b in old) // 4


def report(sock, sid, label, usage=None):
    c = call(sock, "context.compile", session_id=sid, now=NOW)
    m = c["metadata"]
    u = call(sock, "context.usage", session_id=sid)
    said = "-" if usage is None else str(usage)
    print(f"| {label} | {said} | {m['context']['effective_tokens']} | {m['tokens']['anchor_tokens']} | "
          f"{m['cache']['predicted_read_tokens']} | {m['cache'].get('expected_break') or '-'} | {u['used_tokens']} |")
    return c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    ap.add_argument("--session", default=str(FIXTURE))
    a = ap.parse_args()
    imported = call(a.socket, "session.import", jsonl=Path(a.session).read_text(), cwd="/tmp")
    sid = imported["session_id"]
    edits = [{"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 30000},
              "keep": {"type": "tool_uses", "value": 3}}]
    call(a.socket, "session.update", session_id=sid,
         settings={"provider_context_management": {"edits": edits}, "autocompact": False})
    print(f"session {Path(a.session).name}")
    print("| point | the response's usage (prompt) | ctxd estimate | anchor | predicted read | expected break | context.usage |")
    print("|---|---|---|---|---|---|---|")
    before = report(a.socket, sid, "before any clearing")
    total = before["metadata"]["context"]["effective_tokens"]
    cleared = cleared_by_edit(before["request"])
    prompt = max(total - cleared, 1)
    answer = {"id": "msg_cleared", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
              "content": [{"type": "text", "text": "Done with the old results."}], "stop_reason": "end_turn",
              "stop_sequence": None,
              "usage": {"input_tokens": prompt, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0,
                        "output_tokens": 20},
              "context_management": {"applied_edits": [{"type": "clear_tool_uses_20250919",
                                                        "cleared_tool_uses": 10, "cleared_input_tokens": cleared}]}}
    call(a.socket, "transcript.append", session_id=sid,
         records=[{"type": "assistant", "message": answer}, {"type": "user", "content": "next"}])
    report(a.socket, sid, f"after the provider cleared {cleared} tokens", prompt + 20)
    dump = json.loads((ROOT / "tests/fixtures/sdk/beta_compaction.json").read_text())
    call(a.socket, "transcript.append", session_id=sid,
         records=[{"type": "assistant", "message": dump}, {"type": "user", "content": "go on"}])
    u = dump["usage"]
    after = report(a.socket, sid, "after the provider's compaction",
                   u["input_tokens"] + u["cache_read_input_tokens"] + u["output_tokens"])
    first = after["request"]["messages"][0]["content"][0]["type"]
    print(f"\nthe compile after the compaction begins with a `{first}` block and holds "
          f"{len(after['request']['messages'])} messages")
    report_ = call(a.socket, "context.cache_report", session_id=sid)
    drops = [c.get("expected_drop") for c in report_["calls"][-2:]]
    print(f"the cache report's last two calls: expected drops {drops}, breaks {report_['breaks']}")
    call(a.socket, "session.delete", session_id=sid)


if __name__ == "__main__":
    main()

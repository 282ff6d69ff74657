#!/usr/bin/env python3
"""Writes a long Claude Code session for the spine bench: a transcript chained N times.

Each copy after the first gets fresh record uuids, tool-use ids and message ids (so no
two records, tool calls or responses share an id, as in a real session), and its first
record continues the previous copy's last one. The session id stays the same.

    python3 daemon/benches/chain_session.py tests/fixtures/claude-code/viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl 4 /tmp/session-3mb.jsonl
    CTXD_BENCH_SESSION=/tmp/session-3mb.jsonl cargo bench -p ctxd --bench spine

The ids are derived from the copy number and the original id, so the output is the same
at every run.
"""

import hashlib
import json
import re
import sys

IDS = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|toolu_[A-Za-z0-9]+|msg_[A-Za-z0-9]+|req_[A-Za-z0-9]+"
)


def fresh(copy: int, old: str) -> str:
    digest = hashlib.sha256(f"{copy}:{old}".encode()).hexdigest()
    if "_" in old:
        prefix = old.split("_", 1)[0]
        return f"{prefix}_{digest[:24]}"
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def main() -> None:
    if len(sys.argv) != 4:
        sys.exit("usage: chain_session.py SESSION.jsonl COPIES OUT.jsonl")
    source, copies, target = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with open(source, encoding="utf-8") as f:
        lines = [line for line in f.read().splitlines() if line.strip()]
    session_id = next(
        (json.loads(line)["sessionId"] for line in lines if "sessionId" in json.loads(line)),
        None,
    )
    out = []
    last_uuid = None
    for copy in range(copies):
        continued = copy == 0
        for line in lines:
            if copy > 0:
                line = IDS.sub(
                    lambda m: m.group(0) if m.group(0) == session_id else fresh(copy, m.group(0)),
                    line,
                )
            record = json.loads(line)
            if not continued and record.get("parentUuid") is None and "uuid" in record:
                record["parentUuid"] = last_uuid
                line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
                continued = True
            if "uuid" in record:
                last_uuid = record["uuid"]
            out.append(line)
    with open(target, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()

-- Frozen fates of tool results (SPEC §2 "content-replacement records"): what the model
-- was shown for each tool_use_id, decided once and replayed byte for byte.

CREATE TABLE content_replacements (
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    -- 'budget' (tool-result budget) or 'microcompact' (time-based clearing)
    stage       TEXT NOT NULL,
    tool_use_id TEXT NOT NULL,
    -- NULL: seen and kept whole; otherwise the exact string shown instead
    replacement TEXT,
    -- the transcript's last seq when the fate was decided
    decided_seq INTEGER NOT NULL,
    PRIMARY KEY (session_id, stage, tool_use_id)
) STRICT, WITHOUT ROWID;

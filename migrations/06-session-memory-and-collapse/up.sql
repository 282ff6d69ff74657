-- Session memory (SPEC §2, §8 "Session memory") and context collapse (§8 step 4).

CREATE TABLE session_memory (
    session_id           TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    document             TEXT NOT NULL,
    -- bumped by every write; writers pass the version they read (optimistic check)
    version              INTEGER NOT NULL,
    -- the last record the document accounts for
    last_summarized_uuid TEXT,
    -- the context estimate when the document was last extracted (extraction gates)
    tokens_at_extraction INTEGER,
    writer               TEXT NOT NULL,
    updated_at           TEXT NOT NULL
) STRICT;

CREATE TABLE session_memory_history (
    session_id           TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    version              INTEGER NOT NULL,
    document             TEXT NOT NULL,
    last_summarized_uuid TEXT,
    writer               TEXT NOT NULL,
    created_at           TEXT NOT NULL,
    PRIMARY KEY (session_id, version)
) STRICT, WITHOUT ROWID;

-- The collapse store: staged, committed and undone collapses of spans of the history.
CREATE TABLE collapses (
    session_id   TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    id           TEXT NOT NULL,
    position     INTEGER NOT NULL,
    first_uuid   TEXT NOT NULL,
    last_uuid    TEXT NOT NULL,
    record_count INTEGER NOT NULL,
    tokens       INTEGER NOT NULL,
    summary      TEXT NOT NULL,
    status       TEXT NOT NULL,            -- staged | committed | undone
    -- the transcript's last seq when committed: usage anchors before it still count
    -- the folded tokens
    committed_seq INTEGER,
    PRIMARY KEY (session_id, id)
) STRICT, WITHOUT ROWID;

-- The commit log: every stage, commit and undo, in order.
CREATE TABLE collapse_log (
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    collapse_id TEXT NOT NULL,
    action      TEXT NOT NULL,             -- stage | commit | undo
    at          TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) STRICT, WITHOUT ROWID;

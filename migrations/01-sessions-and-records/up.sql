-- Sessions and their append-only transcripts (SPEC §2).

CREATE TABLE sessions (
    id                TEXT PRIMARY KEY,
    cwd               TEXT NOT NULL,
    original_cwd      TEXT NOT NULL,
    model_profile     TEXT NOT NULL,          -- JSON ModelProfile
    settings          TEXT NOT NULL,          -- JSON SessionSettings
    additional_dirs   TEXT NOT NULL DEFAULT '[]',
    system_prompt     TEXT,                   -- JSON SystemPrompt; NULL = default contract
    start_date        TEXT NOT NULL,          -- YYYY-MM-DD, currentDate of messages[0]
    git_snapshot      TEXT,                   -- rendered once at creation; NULL outside git
    parent_session_id TEXT,
    forked_from_uuid  TEXT,
    title             TEXT,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL
) STRICT;

CREATE TABLE records (
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    uuid        TEXT NOT NULL,
    parent_uuid TEXT,
    kind        TEXT NOT NULL,
    timestamp   TEXT NOT NULL,
    message_id  TEXT,
    body        TEXT NOT NULL,                -- JSON Record, canonical serialisation
    PRIMARY KEY (session_id, seq),
    UNIQUE (session_id, uuid)
) STRICT, WITHOUT ROWID;

CREATE TABLE tools (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    position   INTEGER NOT NULL,
    name       TEXT NOT NULL,
    spec       TEXT NOT NULL,                 -- JSON ToolSpec
    PRIMARY KEY (session_id, position),
    UNIQUE (session_id, name)
) STRICT, WITHOUT ROWID;

CREATE TABLE rejected_media (
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    record_uuid TEXT NOT NULL,
    block_index INTEGER NOT NULL,
    PRIMARY KEY (session_id, record_uuid, block_index)
) STRICT, WITHOUT ROWID;

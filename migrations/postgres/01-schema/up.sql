-- The PostgreSQL schema: the tables of the SQLite migrations 01-07 (same names, same
-- columns, same keys; every integer BIGINT, blobs BYTEA), plus what several daemons
-- sharing one database need: a revision per session, the function every write
-- transaction starts with, and the persisted tool outputs (files on one machine under
-- SQLite, rows here so every daemon can materialise them).
--
-- Every text column sorts by code point (COLLATE "C"), as SQLite's BINARY does: orders
-- by path or id reach the compiled request, which must not depend on the server's locale.

CREATE TABLE sessions (
    id                TEXT COLLATE "C" PRIMARY KEY,
    cwd               TEXT COLLATE "C" NOT NULL,
    original_cwd      TEXT COLLATE "C" NOT NULL,
    model_profile     TEXT COLLATE "C" NOT NULL,
    settings          TEXT COLLATE "C" NOT NULL,
    additional_dirs   TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    system_prompt     TEXT COLLATE "C",
    start_date        TEXT COLLATE "C" NOT NULL,
    git_snapshot      TEXT COLLATE "C",
    parent_session_id TEXT COLLATE "C",
    forked_from_uuid  TEXT COLLATE "C",
    title             TEXT COLLATE "C",
    created_at        TEXT COLLATE "C" NOT NULL,
    updated_at        TEXT COLLATE "C" NOT NULL,
    -- bumped by every write transaction of the session: a daemon whose loaded copy is
    -- older reloads it
    revision          BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE records (
    session_id  TEXT COLLATE "C" NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq         BIGINT NOT NULL,
    uuid        TEXT COLLATE "C" NOT NULL,
    parent_uuid TEXT COLLATE "C",
    kind        TEXT COLLATE "C" NOT NULL,
    timestamp   TEXT COLLATE "C" NOT NULL,
    message_id  TEXT COLLATE "C",
    body        TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (session_id, seq),
    UNIQUE (session_id, uuid)
);

CREATE TABLE tools (
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    position   BIGINT NOT NULL,
    name       TEXT COLLATE "C" NOT NULL,
    spec       TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (session_id, position),
    UNIQUE (session_id, name)
);

CREATE TABLE rejected_media (
    session_id  TEXT COLLATE "C" NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    record_uuid TEXT COLLATE "C" NOT NULL,
    block_index BIGINT NOT NULL,
    PRIMARY KEY (session_id, record_uuid, block_index)
);

CREATE TABLE content_replacements (
    session_id  TEXT COLLATE "C" NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    stage       TEXT COLLATE "C" NOT NULL,
    tool_use_id TEXT COLLATE "C" NOT NULL,
    replacement TEXT COLLATE "C",
    decided_seq BIGINT NOT NULL,
    PRIMARY KEY (session_id, stage, tool_use_id)
);

CREATE TABLE cache_edits (
    session_id    TEXT COLLATE "C" NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    position      BIGINT NOT NULL,
    boundary_uuid TEXT COLLATE "C" NOT NULL,
    message_index BIGINT NOT NULL,
    tool_use_ids  TEXT COLLATE "C" NOT NULL,
    decided_seq   BIGINT NOT NULL,
    PRIMARY KEY (session_id, position)
);

CREATE TABLE instruction_state (
    session_id     TEXT COLLATE "C" PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    claude_md      TEXT COLLATE "C",
    boundary_uuid  TEXT COLLATE "C" NOT NULL,
    announced_date TEXT COLLATE "C" NOT NULL
);

CREATE TABLE loaded_instructions (
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    path       TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (session_id, path)
);

CREATE TABLE touched_paths (
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    path       TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (session_id, path)
);

CREATE TABLE file_read_state (
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    path       TEXT COLLATE "C" NOT NULL,
    size       BIGINT NOT NULL,
    mtime_ns   BIGINT NOT NULL,
    sha256     TEXT COLLATE "C" NOT NULL,
    content    TEXT COLLATE "C",
    PRIMARY KEY (session_id, path)
);

CREATE TABLE compaction_state (
    session_id           TEXT COLLATE "C" PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    consecutive_failures BIGINT NOT NULL DEFAULT 0,
    last_error           TEXT COLLATE "C"
);

CREATE TABLE session_memory (
    session_id           TEXT COLLATE "C" PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    document             TEXT COLLATE "C" NOT NULL,
    version              BIGINT NOT NULL,
    last_summarized_uuid TEXT COLLATE "C",
    tokens_at_extraction BIGINT,
    writer               TEXT COLLATE "C" NOT NULL,
    updated_at           TEXT COLLATE "C" NOT NULL
);

CREATE TABLE session_memory_history (
    session_id           TEXT COLLATE "C" NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    version              BIGINT NOT NULL,
    document             TEXT COLLATE "C" NOT NULL,
    last_summarized_uuid TEXT COLLATE "C",
    writer               TEXT COLLATE "C" NOT NULL,
    created_at           TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (session_id, version)
);

CREATE TABLE collapses (
    session_id    TEXT COLLATE "C" NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    id            TEXT COLLATE "C" NOT NULL,
    position      BIGINT NOT NULL,
    first_uuid    TEXT COLLATE "C" NOT NULL,
    last_uuid     TEXT COLLATE "C" NOT NULL,
    record_count  BIGINT NOT NULL,
    tokens        BIGINT NOT NULL,
    summary       TEXT COLLATE "C" NOT NULL,
    status        TEXT COLLATE "C" NOT NULL,
    committed_seq BIGINT,
    PRIMARY KEY (session_id, id)
);

CREATE TABLE collapse_log (
    session_id  TEXT COLLATE "C" NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq         BIGINT NOT NULL,
    collapse_id TEXT COLLATE "C" NOT NULL,
    action      TEXT COLLATE "C" NOT NULL,
    at          TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE compile_log (
    session_id    TEXT COLLATE "C" NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    id            BIGINT NOT NULL,
    boundary_uuid TEXT COLLATE "C" NOT NULL,
    fingerprint   TEXT COLLATE "C" NOT NULL,
    units         BYTEA,
    tool_names    TEXT COLLATE "C",
    PRIMARY KEY (session_id, id)
);

CREATE TABLE request_latches (
    session_id    TEXT COLLATE "C" PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    boundary_uuid TEXT COLLATE "C" NOT NULL,
    flags         TEXT COLLATE "C" NOT NULL
);

-- Persisted tool outputs (the `<persisted-output>` files): `path` is the absolute path
-- the replacement text names, written under the home of the daemon that decided it.
-- Every daemon that loads the session creates the file there if it is missing.
CREATE TABLE persisted_outputs (
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    path       TEXT COLLATE "C" NOT NULL,
    content    TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (session_id, path)
);

-- Every write transaction of a session starts here: it waits for the session's lock
-- (held until commit or rollback, so writes to one session are serialised across
-- daemons) and bumps the session's revision. Returns the new revision, or NULL while
-- the session does not exist yet.
CREATE FUNCTION ctxd_lock_session(sid TEXT) RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE
    rev BIGINT;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(sid, 0));
    UPDATE sessions SET revision = revision + 1 WHERE id = sid RETURNING revision INTO rev;
    RETURN rev;
END
$$;

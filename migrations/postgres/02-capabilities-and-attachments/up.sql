-- The tables of the SQLite migrations 08 (capability state) and 09 (queued input, the
-- memoized system sections), same names, columns and keys.

CREATE TABLE capability_state (
    session_id TEXT COLLATE "C" PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    state      TEXT COLLATE "C" NOT NULL
);

CREATE TABLE queued_input (
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    queue_id   TEXT COLLATE "C" NOT NULL,
    -- '' for the main thread, else the sub-agent's id
    agent_id   TEXT COLLATE "C" NOT NULL,
    -- JSON array of content blocks (text and images)
    content    TEXT COLLATE "C" NOT NULL,
    queued_at  TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (session_id, queue_id)
);

CREATE INDEX queued_input_by_agent ON queued_input (session_id, agent_id, queue_id);

CREATE TABLE section_memo (
    session_id    TEXT COLLATE "C" PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    -- the compact boundary this memo belongs to ('' before any)
    boundary_uuid TEXT COLLATE "C" NOT NULL,
    -- JSON object: section name -> text
    texts         TEXT COLLATE "C" NOT NULL
);

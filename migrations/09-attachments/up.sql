-- The attachments ctxd produces itself (SPEC §5) and the memoized system sections
-- (SPEC §3.1).

-- User input queued while a turn runs (`transcript.queue`), until a compile of its agent
-- delivers it as a `queued_command` attachment (in the same transaction that deletes it).
CREATE TABLE queued_input (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    queue_id   TEXT NOT NULL,
    -- '' for the main thread, else the sub-agent's id
    agent_id   TEXT NOT NULL,
    -- JSON array of content blocks (text and images)
    content    TEXT NOT NULL,
    queued_at  TEXT NOT NULL,
    PRIMARY KEY (session_id, queue_id)
) STRICT;

CREATE INDEX queued_input_by_agent ON queued_input (session_id, agent_id, queue_id);

-- Memoized dynamic system sections: the text each had when first compiled in the
-- current history; a new boundary (compaction) or an explicit reset recomputes them.
CREATE TABLE section_memo (
    session_id    TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    -- the compact boundary this memo belongs to ('' before any)
    boundary_uuid TEXT NOT NULL,
    -- JSON object: section name -> text
    texts         TEXT NOT NULL
) STRICT;

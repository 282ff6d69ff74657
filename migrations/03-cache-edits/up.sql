-- Cache edits sent by cached microcompact. Once a request carried an edit, every later
-- request re-sends it at the same message index (the server's cached prefix includes
-- it). Edits belong to the history after one compact boundary.

CREATE TABLE cache_edits (
    session_id    TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    position      INTEGER NOT NULL,
    -- uuid of the last compact boundary when the edit was sent ('' before any)
    boundary_uuid TEXT NOT NULL,
    message_index INTEGER NOT NULL,
    tool_use_ids  TEXT NOT NULL,              -- JSON array
    decided_seq   INTEGER NOT NULL,
    PRIMARY KEY (session_id, position)
) STRICT, WITHOUT ROWID;

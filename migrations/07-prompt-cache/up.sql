-- Prompt-cache care (SPEC §9). Every main compile leaves what keyed the provider's cache
-- (its fingerprint), so breaks seen later in reported usage can be attributed; the newest
-- row also keeps the request's cache-key units, so the predicted prefix of the next
-- compile survives a restart. Rows beyond the newest 256 of a session are pruned.

CREATE TABLE compile_log (
    session_id     TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    id             INTEGER NOT NULL,
    boundary_uuid  TEXT NOT NULL,
    fingerprint    TEXT NOT NULL,
    units          BLOB,
    tool_names     TEXT,
    PRIMARY KEY (session_id, id)
) STRICT;

-- Request flags latched for the current history (reset by a new compact boundary).
CREATE TABLE request_latches (
    session_id     TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    boundary_uuid  TEXT NOT NULL,
    flags          TEXT NOT NULL
) STRICT;

-- The newest compile's cache units live in a row of their own per session, replaced by
-- each compile, instead of on the newest compile_log row, which each compile had to take
-- back from its predecessor. With the log pruned every few compiles instead of at each,
-- a compile's write goes from about eight WAL frames to about four.
CREATE TABLE compile_units (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    id         INTEGER NOT NULL,              -- the compile_log row they belong to
    units      BLOB NOT NULL,
    tool_names TEXT NOT NULL
) STRICT;

INSERT INTO compile_units (session_id, id, units, tool_names)
    SELECT session_id, id, units, tool_names FROM compile_log AS c
    WHERE units IS NOT NULL AND tool_names IS NOT NULL
      AND id = (SELECT MAX(id) FROM compile_log WHERE session_id = c.session_id);

ALTER TABLE compile_log DROP COLUMN units;
ALTER TABLE compile_log DROP COLUMN tool_names;

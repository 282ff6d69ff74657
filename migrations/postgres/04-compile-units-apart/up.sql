-- As SQLite's 12-compile-units-apart: the newest compile's cache units in a row of their
-- own per session, replaced by each compile.
CREATE TABLE compile_units (
    session_id TEXT COLLATE "C" PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    id         BIGINT NOT NULL,
    units      BYTEA NOT NULL,
    tool_names TEXT COLLATE "C" NOT NULL
);

INSERT INTO compile_units (session_id, id, units, tool_names)
    SELECT session_id, id, units, tool_names FROM compile_log AS c
    WHERE units IS NOT NULL AND tool_names IS NOT NULL
      AND id = (SELECT MAX(id) FROM compile_log WHERE session_id = c.session_id);

ALTER TABLE compile_log DROP COLUMN units;
ALTER TABLE compile_log DROP COLUMN tool_names;

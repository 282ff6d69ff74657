-- As SQLite's 14-agents.
ALTER TABLE sessions ADD COLUMN agent_id TEXT;
ALTER TABLE sessions ADD COLUMN agent TEXT;
CREATE UNIQUE INDEX sessions_agent ON sessions (parent_session_id, agent_id);

-- A sub-agent's thread is a session of its own: agent_id names it within its parent
-- (parent_session_id), agent holds its AgentInfo as JSON. NULL for every other session.
ALTER TABLE sessions ADD COLUMN agent_id TEXT;
ALTER TABLE sessions ADD COLUMN agent TEXT;
CREATE UNIQUE INDEX sessions_agent ON sessions (parent_session_id, agent_id);

-- The capability surface (SPEC §6): what the agent told ctxd about its MCP servers and
-- agent types, the MCP instructions memoized into the system section at the first
-- compile, and discoveries and skill invocations reported by RPC (those seen in the
-- transcript — tool_reference blocks, Skill tool_uses — are read from the records).
-- One JSON document per session: these change rarely and are always read together.

CREATE TABLE capability_state (
    session_id  TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    state       TEXT NOT NULL
) STRICT;

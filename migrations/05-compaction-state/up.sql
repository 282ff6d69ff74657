-- Autocompact's circuit breaker: consecutive failures, reset by a success or a manual
-- compact (SPEC §8 step 5).

CREATE TABLE compaction_state (
    session_id           TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    last_error           TEXT
) STRICT;

-- Instruction files (the memoized claudeMd, what was loaded) and file read state
-- (what the model has seen of which file), SPEC §2 and §4.

CREATE TABLE instruction_state (
    session_id     TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    -- rendered `# claudeMd` text; NULL when no instruction file applies
    claude_md      TEXT,
    -- the compact boundary this memo belongs to ('' before any): a new boundary resets it
    boundary_uuid  TEXT NOT NULL,
    -- the last date announced to the model (start date or a date_change)
    announced_date TEXT NOT NULL
) STRICT;

-- Instruction files already in the model's view (startup chain and nested_memory), so a
-- file is never injected twice.
CREATE TABLE loaded_instructions (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    path       TEXT NOT NULL,
    PRIMARY KEY (session_id, path)
) STRICT, WITHOUT ROWID;

-- Paths the agent touched whose nested instructions are not yet decided.
CREATE TABLE touched_paths (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    path       TEXT NOT NULL,
    PRIMARY KEY (session_id, path)
) STRICT, WITHOUT ROWID;

-- What the model has seen of each file, to diff against when it changes on disk.
CREATE TABLE file_read_state (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    path       TEXT NOT NULL,
    size       INTEGER NOT NULL,
    mtime_ns   INTEGER NOT NULL,
    sha256     TEXT NOT NULL,
    -- the content as last seen; NULL when too large or not text (changes are then
    -- announced without a snippet)
    content    TEXT,
    PRIMARY KEY (session_id, path)
) STRICT, WITHOUT ROWID;

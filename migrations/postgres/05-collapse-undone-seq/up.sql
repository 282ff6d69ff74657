-- As SQLite's 13-collapse-undone-seq.
ALTER TABLE collapses ADD COLUMN undone_seq BIGINT;

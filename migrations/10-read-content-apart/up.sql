-- What the model saw of each file lives apart from the file's stamp. Every compile reads
-- the stamps of all the files a session has seen, and only the content of those that
-- changed on disk; a stamp row holding the content (up to 1 MB) made that read step over
-- every file's content, on overflow pages, at every compile.
CREATE TABLE file_read_content (
    session_id TEXT NOT NULL,
    path       TEXT NOT NULL,
    -- the file's text as the model last saw it (absent when too large or not text)
    content    TEXT NOT NULL,
    PRIMARY KEY (session_id, path),
    FOREIGN KEY (session_id, path) REFERENCES file_read_state (session_id, path) ON DELETE CASCADE
) STRICT;

INSERT INTO file_read_content (session_id, path, content)
    SELECT session_id, path, content FROM file_read_state WHERE content IS NOT NULL;

ALTER TABLE file_read_state DROP COLUMN content;

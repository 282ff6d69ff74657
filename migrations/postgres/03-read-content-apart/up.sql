-- What the model saw of each file lives apart from the file's stamp (see the SQLite
-- migration of the same name): a compile reads every stamp, and the content only of the
-- files that changed on disk.
CREATE TABLE file_read_content (
    session_id TEXT COLLATE "C" NOT NULL,
    path       TEXT COLLATE "C" NOT NULL,
    content    TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (session_id, path),
    FOREIGN KEY (session_id, path) REFERENCES file_read_state (session_id, path) ON DELETE CASCADE
);

INSERT INTO file_read_content (session_id, path, content)
    SELECT session_id, path, content FROM file_read_state WHERE content IS NOT NULL;

ALTER TABLE file_read_state DROP COLUMN content;

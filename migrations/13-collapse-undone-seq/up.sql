-- Where the transcript stood when a collapse was undone: a usage anchor between its
-- commit and its undo counted the view without the span, so the estimate adds it back.
ALTER TABLE collapses ADD COLUMN undone_seq INTEGER;

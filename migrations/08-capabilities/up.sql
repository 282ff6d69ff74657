-- Placeholder on branch i11 only: migration ids must be consecutive, and 08 belongs to
-- issue 10 (capabilities). At merge, issue 10's file of this name replaces this one.
SELECT 1;

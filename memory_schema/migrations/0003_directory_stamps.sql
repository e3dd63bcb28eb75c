-- How each root's experience directory looked when it was last listed, so that one
-- stat of the directory tells a turn whether a file was added, removed or renamed
-- over (dir_mtime_ns: the directory's mtime just before that listing; dir_listed_ns:
-- when it was taken). last_sync stays the time of the last full scan.
ALTER TABLE roots ADD COLUMN dir_mtime_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE roots ADD COLUMN dir_listed_ns INTEGER NOT NULL DEFAULT 0;

-- Each file's inode number (0: not known yet): an editor that saves by renaming a
-- new file over the old one changes it under the same name.
ALTER TABLE experiences ADD COLUMN inode INTEGER NOT NULL DEFAULT 0;

-- The newest experiences, overall and per project, without sorting the table.
CREATE INDEX experiences_date ON experiences (date);
CREATE INDEX experiences_project_date ON experiences (project, date);

-- Files the bridge itself wrote (or removed) and indexed at once, until the next
-- listing of their directory: they explain its new mtime, so it is not taken for
-- a file written in place (which would mean looking at every file).
CREATE TABLE own_writes (
    path TEXT PRIMARY KEY,
    root TEXT NOT NULL
);
CREATE INDEX own_writes_root ON own_writes (root);

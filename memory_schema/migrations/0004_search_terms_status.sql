-- How a person would describe the problem later (the front matter's search_terms,
-- newline-separated), indexed with less weight than the experience's own words, and
-- its review state (status: new, accepted, rejected or forgotten; '' = accepted).
-- A rejected or forgotten experience keeps its row (so a scan does not read it
-- again) with nothing searchable in it.
ALTER TABLE experiences ADD COLUMN search_terms TEXT NOT NULL DEFAULT '';
ALTER TABLE experiences ADD COLUMN status TEXT NOT NULL DEFAULT '';

-- FTS5 tables cannot gain a column: the full-text index is made again with one.
DROP TRIGGER experiences_ai;
DROP TRIGGER experiences_ad;
DROP TRIGGER experiences_au;
DROP TABLE experiences_fts;
CREATE VIRTUAL TABLE experiences_fts USING fts5 (
    title, tags, symbols, summary, body, search_terms,
    content = 'experiences', content_rowid = 'id', tokenize = 'trigram'
);

CREATE TRIGGER experiences_ai AFTER INSERT ON experiences BEGIN
    INSERT INTO experiences_fts (rowid, title, tags, symbols, summary, body, search_terms)
    VALUES (new.id, new.title, new.tags, new.symbols, new.summary, new.body, new.search_terms);
END;

CREATE TRIGGER experiences_ad AFTER DELETE ON experiences BEGIN
    INSERT INTO experiences_fts
        (experiences_fts, rowid, title, tags, symbols, summary, body, search_terms)
    VALUES ('delete', old.id, old.title, old.tags, old.symbols, old.summary, old.body,
            old.search_terms);
END;

CREATE TRIGGER experiences_au AFTER UPDATE OF title, tags, symbols, summary, body, search_terms
ON experiences BEGIN
    INSERT INTO experiences_fts
        (experiences_fts, rowid, title, tags, symbols, summary, body, search_terms)
    VALUES ('delete', old.id, old.title, old.tags, old.symbols, old.summary, old.body,
            old.search_terms);
    INSERT INTO experiences_fts (rowid, title, tags, symbols, summary, body, search_terms)
    VALUES (new.id, new.title, new.tags, new.symbols, new.summary, new.body, new.search_terms);
END;

INSERT INTO experiences_fts (experiences_fts) VALUES ('rebuild');

-- Every file is read again at the next scan or turn, to fill the new columns.
UPDATE experiences SET mtime_ns = 0, file_hash = '';
UPDATE roots SET dir_mtime_ns = 0;
CREATE INDEX experiences_status ON experiences (status);

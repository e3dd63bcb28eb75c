-- Known project roots, so a rebuild can find every experience file again.
CREATE TABLE roots (
    path TEXT PRIMARY KEY,
    project TEXT NOT NULL,
    last_sync REAL NOT NULL DEFAULT 0
);

-- One row per experience file; tags and symbols are newline-separated.
CREATE TABLE experiences (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    root TEXT NOT NULL,
    project TEXT NOT NULL,
    title TEXT NOT NULL,
    date TEXT NOT NULL DEFAULT '',
    task_type TEXT NOT NULL DEFAULT '',
    tags TEXT NOT NULL DEFAULT '',
    symbols TEXT NOT NULL DEFAULT '',
    trigger_reason TEXT NOT NULL DEFAULT '',
    summary TEXT NOT NULL DEFAULT '',
    body TEXT NOT NULL DEFAULT '',
    file_hash TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    indexed_ns INTEGER NOT NULL,
    parse_error TEXT
);
CREATE INDEX experiences_root ON experiences (root);
CREATE INDEX experiences_project ON experiences (project);

-- Full-text index over the searchable columns; trigram handles CJK and substrings.
CREATE VIRTUAL TABLE experiences_fts USING fts5 (
    title, tags, symbols, summary, body,
    content = 'experiences', content_rowid = 'id', tokenize = 'trigram'
);

CREATE TRIGGER experiences_ai AFTER INSERT ON experiences BEGIN
    INSERT INTO experiences_fts (rowid, title, tags, symbols, summary, body)
    VALUES (new.id, new.title, new.tags, new.symbols, new.summary, new.body);
END;

CREATE TRIGGER experiences_ad AFTER DELETE ON experiences BEGIN
    INSERT INTO experiences_fts (experiences_fts, rowid, title, tags, symbols, summary, body)
    VALUES ('delete', old.id, old.title, old.tags, old.symbols, old.summary, old.body);
END;

CREATE TRIGGER experiences_au AFTER UPDATE OF title, tags, symbols, summary, body
ON experiences BEGIN
    INSERT INTO experiences_fts (experiences_fts, rowid, title, tags, symbols, summary, body)
    VALUES ('delete', old.id, old.title, old.tags, old.symbols, old.summary, old.body);
    INSERT INTO experiences_fts (rowid, title, tags, symbols, summary, body)
    VALUES (new.id, new.title, new.tags, new.symbols, new.summary, new.body);
END;

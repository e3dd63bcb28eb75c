"""Numbered schema migrations of the memory index, tracked in ``PRAGMA user_version``.

The SQL lives here as strings so the installed package can always apply it;
``memory_schema/schema.sql`` is :func:`schema_sql` written out (a test keeps the two
identical).  Append migrations, never edit an applied one: migration *n* moves
``user_version`` from *n-1* to *n* inside one transaction.
"""

from __future__ import annotations

import sqlite3

from ..errors import MemoryError_

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "apply_migrations", "schema_sql"]

_M0001 = """\
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
"""

_M0002 = """\
-- Terms the trigram index cannot match (it needs three characters): every CJK
-- character and pair of adjacent CJK characters, and every word of one or two
-- letters, one token each, written by the indexer (memory/query.py short_grams).
-- Two-character Chinese words (中文, 测试) are found here by MATCH, not by LIKE scans.
CREATE VIRTUAL TABLE experiences_short USING fts5 (
    grams, tokenize = 'unicode61 remove_diacritics 0', detail = 'none'
);

-- Each experience's symbols, case-folded, for exact lookups through an index.
CREATE TABLE experience_symbols (
    symbol TEXT NOT NULL,
    experience_id INTEGER NOT NULL,
    PRIMARY KEY (symbol, experience_id)
) WITHOUT ROWID;
CREATE INDEX experience_symbols_owner ON experience_symbols (experience_id);

CREATE TRIGGER experiences_aux_ad AFTER DELETE ON experiences BEGIN
    DELETE FROM experiences_short WHERE rowid = old.id;
    DELETE FROM experience_symbols WHERE experience_id = old.id;
END;
"""

_M0003 = """\
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
"""

_M0004 = """\
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
"""

_M0005 = """\
-- Whole words, for choosing candidates: a word (and its porter stem) is one lookup
-- here, where the trigram index matches every trigram of it and then their
-- positions. Synonyms and stems of a task's words choose candidates here; the
-- trigram index still matches substrings and Chinese, and ranks the task's own words.
CREATE VIRTUAL TABLE experiences_words USING fts5 (
    title, tags, symbols, summary, body, search_terms,
    content = 'experiences', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER experiences_words_ai AFTER INSERT ON experiences BEGIN
    INSERT INTO experiences_words (rowid, title, tags, symbols, summary, body, search_terms)
    VALUES (new.id, new.title, new.tags, new.symbols, new.summary, new.body, new.search_terms);
END;

CREATE TRIGGER experiences_words_ad AFTER DELETE ON experiences BEGIN
    INSERT INTO experiences_words
        (experiences_words, rowid, title, tags, symbols, summary, body, search_terms)
    VALUES ('delete', old.id, old.title, old.tags, old.symbols, old.summary, old.body,
            old.search_terms);
END;

CREATE TRIGGER experiences_words_au
AFTER UPDATE OF title, tags, symbols, summary, body, search_terms ON experiences BEGIN
    INSERT INTO experiences_words
        (experiences_words, rowid, title, tags, symbols, summary, body, search_terms)
    VALUES ('delete', old.id, old.title, old.tags, old.symbols, old.summary, old.body,
            old.search_terms);
    INSERT INTO experiences_words (rowid, title, tags, symbols, summary, body, search_terms)
    VALUES (new.id, new.title, new.tags, new.symbols, new.summary, new.body, new.search_terms);
END;

INSERT INTO experiences_words (experiences_words) VALUES ('rebuild');
"""

MIGRATIONS: tuple[str, ...] = (_M0001, _M0002, _M0003, _M0004, _M0005)
SCHEMA_VERSION = len(MIGRATIONS)

_HEADER = """\
-- agent-shell memory index schema (SQLite 3.34+ with FTS5).
-- Generated from agent_shell_bridge/memory/migrations.py; do not edit by hand.
-- Each migration N runs in one transaction and sets PRAGMA user_version = N.
"""


def schema_sql() -> str:
    """The whole schema as one script, as kept in ``memory_schema/schema.sql``."""
    parts = [_HEADER]
    for n, sql in enumerate(MIGRATIONS, start=1):
        parts.append(f"\n-- migration {n:04d}\n{sql}PRAGMA user_version = {n};\n")
    return "".join(parts)


def apply_migrations(conn: sqlite3.Connection) -> int:
    """Bring ``conn`` to :data:`SCHEMA_VERSION`; returns the version found before.

    ``conn`` must be in autocommit mode (``isolation_level=None``).
    """
    (current,) = conn.execute("PRAGMA user_version").fetchone()
    if current > SCHEMA_VERSION:
        raise MemoryError_(
            f"memory index schema version {current} is newer than this bridge knows "
            f"({SCHEMA_VERSION}); upgrade agent-shell-bridge or remove the index"
        )
    for n in range(current + 1, SCHEMA_VERSION + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have migrated while we waited for the write lock.
            (now,) = conn.execute("PRAGMA user_version").fetchone()
            if now < n:
                import logging  # only when migrating: a read of a current index never is

                logging.getLogger(__name__).info("memory index: applying migration %d", n)
                for statement in _statements(MIGRATIONS[n - 1]):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {n}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    return int(current)


def _statements(script: str) -> list[str]:
    """Split a script into complete statements (trigger bodies contain ``;``)."""
    out: list[str] = []
    buf = ""
    for line in script.splitlines(keepends=True):
        if not buf and (not line.strip() or line.lstrip().startswith("--")):
            continue
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out

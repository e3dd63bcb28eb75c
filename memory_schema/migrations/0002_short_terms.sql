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

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

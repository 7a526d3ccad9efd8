-- Holds begin, once no node of an older version, which does not count held units, is left
-- (this finishes an upgrade: `petstore migrate --finish`; a new database runs it at once).
CREATE TABLE holds_opened (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    at TEXT NOT NULL
);
INSERT INTO holds_opened (id, at) VALUES (1, strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z');

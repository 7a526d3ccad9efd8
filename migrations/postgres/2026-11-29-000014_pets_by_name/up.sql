-- Lists of pets by name page by keyset on (name_key, id). The folded names compare byte by
-- byte ("C"), as SQLite's and the memory store's do, so that every store and every database
-- locale gives one order. Only the collation changes: no row is rewritten, and a node of the
-- previous version, which only searches name_key with LIKE, finds what it found before.
ALTER TABLE pets ALTER COLUMN name_key TYPE text COLLATE "C";
CREATE INDEX pets_by_name ON pets (name_key, id);

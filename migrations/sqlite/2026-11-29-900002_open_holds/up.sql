-- Holds begin, once no node of an older version, which does not count held units, is left
-- (this finishes an upgrade: `petstore migrate --finish`; a new database runs it at once).
INSERT INTO holds_opened (id, at)
SELECT 1, strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'
WHERE NOT EXISTS (SELECT 1 FROM holds_opened);

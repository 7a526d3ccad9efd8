-- API keys. The secret is never stored: only its first characters (to find the key) and its
-- SHA-256 hash (to check it). Keys are revoked, never deleted, so the orders a key placed
-- keep pointing at it.
CREATE TABLE api_keys (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    role       TEXT NOT NULL CHECK (role IN ('admin', 'staff', 'customer')),
    prefix     TEXT NOT NULL,
    hash       BLOB NOT NULL UNIQUE CHECK (length(hash) = 32),
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE INDEX api_keys_by_prefix ON api_keys (prefix);

CREATE TRIGGER api_keys_are_not_deleted
BEFORE DELETE ON api_keys
BEGIN
    SELECT RAISE(ABORT, 'keys are revoked, not deleted');
END;

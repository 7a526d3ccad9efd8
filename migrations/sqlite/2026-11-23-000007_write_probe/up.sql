-- One row that readiness writes to prove the database takes writes (file permissions, a
-- failing disk) before any write since the start, or after a write failed for the disk's sake.
CREATE TABLE write_probe (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    probed_at TEXT NOT NULL
);

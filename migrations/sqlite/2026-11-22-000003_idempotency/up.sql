-- What each idempotency key was answered, per owner (in the HTTP service, the API key's id),
-- written in the same transaction as the request's effect. Records are forgotten 24 hours
-- after they are made.
CREATE TABLE idempotency_records (
    owner_id         INTEGER NOT NULL CHECK (owner_id > 0),
    idempotency_key  TEXT NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    fingerprint      BLOB NOT NULL CHECK (length(fingerprint) = 32),
    status           INTEGER NOT NULL CHECK (status BETWEEN 100 AND 599),
    headers          TEXT NOT NULL CHECK (json_valid(headers)),
    body             BLOB NOT NULL,
    recorded_at      TEXT NOT NULL,
    PRIMARY KEY (owner_id, idempotency_key)
) WITHOUT ROWID;
CREATE INDEX idempotency_records_by_age ON idempotency_records (recorded_at);

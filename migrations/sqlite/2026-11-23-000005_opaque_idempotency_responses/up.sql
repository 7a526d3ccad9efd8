-- The domain no longer knows HTTP: a recorded answer is one opaque value that only the layer
-- which recorded it reads. The HTTP layer's form is a JSON object
-- {"status": N, "headers": [[name, value], ...], "body": "<the JSON body as text>"}, which is what the
-- three columns held, so records made before this migration still replay.
CREATE TABLE idempotency_records_new (
    owner_id         INTEGER NOT NULL CHECK (owner_id > 0),
    idempotency_key  TEXT NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    fingerprint      BLOB NOT NULL CHECK (length(fingerprint) = 32),
    response         BLOB NOT NULL,
    recorded_at      TEXT NOT NULL,
    PRIMARY KEY (owner_id, idempotency_key)
) WITHOUT ROWID;
INSERT INTO idempotency_records_new (owner_id, idempotency_key, fingerprint, response, recorded_at)
SELECT owner_id, idempotency_key, fingerprint,
       CAST(json_object('status', status, 'headers', json(headers),
                        'body', CAST(body AS TEXT)) AS BLOB),
       recorded_at
FROM idempotency_records;
DROP TABLE idempotency_records;
ALTER TABLE idempotency_records_new RENAME TO idempotency_records;
CREATE INDEX idempotency_records_by_age ON idempotency_records (recorded_at);

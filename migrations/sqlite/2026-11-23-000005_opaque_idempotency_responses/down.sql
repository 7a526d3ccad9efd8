CREATE TABLE idempotency_records_old (
    owner_id         INTEGER NOT NULL CHECK (owner_id > 0),
    idempotency_key  TEXT NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    fingerprint      BLOB NOT NULL CHECK (length(fingerprint) = 32),
    status           INTEGER NOT NULL CHECK (status BETWEEN 100 AND 599),
    headers          TEXT NOT NULL CHECK (json_valid(headers)),
    body             BLOB NOT NULL,
    recorded_at      TEXT NOT NULL,
    PRIMARY KEY (owner_id, idempotency_key)
) WITHOUT ROWID;
-- Records in another form than the HTTP layer's are dropped: they could not replay anyway.
INSERT INTO idempotency_records_old
SELECT owner_id, idempotency_key, fingerprint,
       json_extract(CAST(response AS TEXT), '$.status'),
       json(json_extract(CAST(response AS TEXT), '$.headers')),
       CAST(json_extract(CAST(response AS TEXT), '$.body') AS BLOB),
       recorded_at
FROM idempotency_records
WHERE json_valid(CAST(response AS TEXT));
DROP TABLE idempotency_records;
ALTER TABLE idempotency_records_old RENAME TO idempotency_records;
CREATE INDEX idempotency_records_by_age ON idempotency_records (recorded_at);

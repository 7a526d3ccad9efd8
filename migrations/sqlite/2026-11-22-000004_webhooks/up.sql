-- Webhook subscriptions. Unlike an API key's, the secret is kept as issued: the service signs
-- every delivery with it (docs/security.md says what that means for this file).
-- `delivered_through` is the subscription's cursor: every event it receives up to that id has
-- been delivered. A subscription owes at most one event at a time, so `failed_attempts` and
-- `next_attempt_at` describe the attempts at that one event.
CREATE TABLE webhooks (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    url               TEXT NOT NULL CHECK (length(url) BETWEEN 8 AND 2048),
    event_types       TEXT NOT NULL CHECK (length(event_types) > 0),
    secret            TEXT NOT NULL,
    created_at        TEXT NOT NULL,
    delivered_through INTEGER NOT NULL CHECK (delivered_through >= 0),
    failed_attempts   INTEGER NOT NULL DEFAULT 0 CHECK (failed_attempts >= 0),
    next_attempt_at   TEXT
);

-- Every attempt, for `GET /v1/webhooks/{id}/deliveries`; forgotten with their subscription.
CREATE TABLE webhook_deliveries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id      INTEGER NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id        INTEGER NOT NULL,
    event_type      TEXT NOT NULL,
    attempt         INTEGER NOT NULL CHECK (attempt >= 1),
    attempted_at    TEXT NOT NULL,
    outcome         TEXT NOT NULL CHECK (outcome IN ('delivered', 'failed')),
    status_code     INTEGER CHECK (status_code BETWEEN 100 AND 999),
    error           TEXT,
    next_attempt_at TEXT
);
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, id);

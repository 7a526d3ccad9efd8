-- How many events a subscription has had delivered. A delivery run records its successes in
-- batches (the cursor, this count, and the batch's latest success as an attempt) rather than
-- a row per event: docs/events.md says what is kept.
ALTER TABLE webhooks ADD COLUMN delivered_events INTEGER NOT NULL DEFAULT 0
    CHECK (delivered_events >= 0);

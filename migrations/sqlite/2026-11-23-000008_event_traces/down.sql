ALTER TABLE events DROP COLUMN traceparent;

-- Back to ids from a sequence, which continues above every id given so far; events still
-- pending are stamped first, so that none is lost.
SELECT stamp_events();
DROP FUNCTION feed_last();
DROP FUNCTION feed_after(bigint, integer);
DROP FUNCTION stamp_events();
ALTER TABLE events ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY;
SELECT setval(pg_get_serial_sequence('events', 'id'), last_id, last_id > 0)
FROM event_feed WHERE last_id > 0;
DROP TABLE event_feed;
DROP TABLE pending_events;

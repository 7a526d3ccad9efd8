-- Back to ids from a sequence, which continues above every id given so far.
DROP TABLE event_feed;
ALTER TABLE events ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY;
SELECT setval(pg_get_serial_sequence('events', 'id'), GREATEST(MAX(id), 1)) FROM events;

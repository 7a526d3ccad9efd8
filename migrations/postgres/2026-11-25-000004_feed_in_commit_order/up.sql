-- Feed positions that follow the order transactions finish in, without a lock every writer
-- takes turns on (docs/storage.md, "The feed on PostgreSQL"). An event's id is
--   base + (id of the transaction that wrote it) * 65536 + (its place in that transaction),
-- written by the service (postgres/tx.rs), and the feed shows only the events of
-- transactions older than every one still running. `base` puts new ids above every id already
-- given; it moves only while no event is being written (a copy, a restore found at start).
CREATE TABLE event_feed (
    one_row boolean PRIMARY KEY DEFAULT true CHECK (one_row),
    base    bigint NOT NULL
);

ALTER TABLE events ALTER COLUMN id DROP IDENTITY;

-- Transaction ids not yet given are at or above the snapshot's xmax: every event written
-- from now on gets an id above the largest there is.
INSERT INTO event_feed (base)
SELECT COALESCE(MAX(id), 0) + 1
       - pg_snapshot_xmax(pg_current_snapshot())::text::bigint * 65536
FROM events;

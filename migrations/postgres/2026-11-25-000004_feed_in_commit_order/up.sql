-- The feed in commit order without a lock every writer takes turns on (docs/storage.md, "The
-- feed on PostgreSQL"). A change appends its events to `pending_events`, taking no lock; a
-- stamper (`stamp_events`, run before the feed is read) moves what has committed there into
-- `events`, giving ids above every id given before, one stamper at a time. Ids then follow
-- the order stampers commit in, so a reader sees every event up to some id and never one
-- below an id it has already seen.

-- Events committed and not yet given their place in the feed, in the order they were written.
CREATE TABLE pending_events (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    time        timestamptz NOT NULL,
    type        text NOT NULL,
    subject     text NOT NULL,
    data        jsonb NOT NULL,
    traceparent text
);

-- The last id the feed gave: the next stamp continues above it.
CREATE TABLE event_feed (
    one_row boolean PRIMARY KEY DEFAULT true CHECK (one_row),
    last_id bigint NOT NULL
);

INSERT INTO event_feed (last_id)
SELECT GREATEST(
    COALESCE((SELECT MAX(id) FROM events), 0),
    (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM events_id_seq));

ALTER TABLE events ALTER COLUMN id DROP IDENTITY;

-- Moves the committed pending events into the feed, in the order they were written, and
-- returns how many. Stampers take turns on a transaction-scoped advisory lock held until
-- they commit, so each gives ids above the last one's and commits after it. It needs a
-- statement snapshot taken after the lock (READ COMMITTED): anywhere else (a read-only or
-- repeatable-read transaction) it does nothing, and a later stamp moves those events.
CREATE FUNCTION stamp_events() RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    head    bigint;
    stamped bigint;
BEGIN
    IF current_setting('transaction_read_only') = 'on'
       OR current_setting('transaction_isolation') <> 'read committed'
       OR NOT EXISTS (SELECT FROM pending_events) THEN
        RETURN 0;
    END IF;
    PERFORM pg_advisory_xact_lock(8099007543883687268);  -- "petsfeed"
    SELECT last_id INTO head FROM event_feed;
    WITH moved AS (
        DELETE FROM pending_events
        RETURNING seq, time, type, subject, data, traceparent
    )
    INSERT INTO events (id, time, type, subject, data, traceparent)
    SELECT head + row_number() OVER (ORDER BY seq), time, type, subject, data, traceparent
    FROM moved;
    GET DIAGNOSTICS stamped = ROW_COUNT;
    IF stamped > 0 THEN
        UPDATE event_feed SET last_id = head + stamped;
    END IF;
    RETURN stamped;
END;
$$;

-- A page of the feed after `after`, oldest first, once what has committed is stamped.
CREATE FUNCTION feed_after(after bigint, page integer) RETURNS SETOF events
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM stamp_events();
    RETURN QUERY SELECT * FROM events WHERE id > after ORDER BY id LIMIT page;
END;
$$;

-- The id of the feed's last event once what has committed is stamped, NULL when there is none.
CREATE FUNCTION feed_last() RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM stamp_events();
    RETURN (SELECT MAX(id) FROM events);
END;
$$;

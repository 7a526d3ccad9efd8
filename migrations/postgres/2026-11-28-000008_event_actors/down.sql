CREATE OR REPLACE FUNCTION stamp_events() RETURNS bigint
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

ALTER TABLE events DROP COLUMN actor;
ALTER TABLE pending_events DROP COLUMN actor;

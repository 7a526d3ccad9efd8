-- The checks as they were: `abs`, `length` and `json_valid` called again.
CREATE TABLE stock_movements_checked_with_calls (
    id               INTEGER PRIMARY KEY,
    pet_id           INTEGER NOT NULL CHECK (pet_id > 0),
    kind             TEXT NOT NULL,
    quantity         INTEGER NOT NULL CHECK (quantity >= 0),
    available_change INTEGER NOT NULL,
    committed_change INTEGER NOT NULL,
    available_after  INTEGER NOT NULL CHECK (available_after >= 0),
    committed_after  INTEGER NOT NULL CHECK (committed_after >= 0),
    order_id         INTEGER CHECK (order_id > 0),
    line_no          INTEGER CHECK (line_no BETWEEN 1 AND 50),
    reason           TEXT CHECK (length(reason) BETWEEN 1 AND 200),
    actor            TEXT,
    request_id       TEXT CHECK (length(request_id) BETWEEN 1 AND 128),
    time             TEXT NOT NULL,
    held_change      INTEGER NOT NULL DEFAULT 0,
    held_after       INTEGER NOT NULL DEFAULT 0 CHECK (held_after >= 0),
    hold_id          INTEGER CHECK (hold_id > 0),
    CHECK ((line_no IS NULL) = (order_id IS NULL)),
    CHECK (CASE kind
        WHEN 'opening' THEN available_change = quantity AND held_change = 0
                            AND committed_change >= 0
        WHEN 'set' THEN held_change = 0 AND committed_change = 0
                        AND abs(available_change) = quantity
        WHEN 'adjusted' THEN held_change = 0 AND committed_change = 0
                             AND abs(available_change) = quantity
        WHEN 'committed' THEN available_change = -quantity AND held_change = 0
                              AND committed_change = quantity
        WHEN 'released' THEN available_change = quantity AND held_change = 0
                             AND committed_change = -quantity
        WHEN 'sold' THEN available_change = 0 AND held_change = 0
                         AND committed_change = -quantity
        WHEN 'written_off' THEN available_change = -quantity AND held_change = 0
                                AND committed_change = 0
        WHEN 'held' THEN available_change = -quantity AND held_change = quantity
                         AND committed_change = 0
        WHEN 'hold_released' THEN available_change = quantity AND held_change = -quantity
                                  AND committed_change = 0
        WHEN 'hold_expired' THEN available_change = quantity AND held_change = -quantity
                                 AND committed_change = 0
        WHEN 'hold_committed' THEN available_change = 0 AND held_change = -quantity
                                   AND committed_change = quantity
        ELSE 0
    END)
);
INSERT INTO stock_movements_checked_with_calls (id, pet_id, kind, quantity, available_change,
    committed_change, available_after, committed_after, order_id, line_no, reason, actor,
    request_id, time, held_change, held_after, hold_id)
SELECT id, pet_id, kind, quantity, available_change, committed_change, available_after,
    committed_after, order_id, line_no, reason, actor, request_id, time, held_change,
    held_after, hold_id
FROM stock_movements;
DROP TABLE stock_movements;
ALTER TABLE stock_movements_checked_with_calls RENAME TO stock_movements;
-- Keyset pages of one pet's movements.
CREATE INDEX stock_movements_by_pet ON stock_movements (pet_id, id);

CREATE TABLE events_checked_with_calls (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    time        TEXT NOT NULL,
    type        TEXT NOT NULL,
    subject     TEXT NOT NULL,
    data        TEXT NOT NULL CHECK (json_valid(data)),
    traceparent TEXT,
    actor       TEXT
);
INSERT INTO events_checked_with_calls (id, time, type, subject, data, traceparent, actor)
SELECT id, time, type, subject, data, traceparent, actor FROM events;
DELETE FROM sqlite_sequence WHERE name = 'events_checked_with_calls';
INSERT INTO sqlite_sequence (name, seq)
SELECT 'events_checked_with_calls', seq FROM sqlite_sequence WHERE name = 'events';
DROP TABLE events;
ALTER TABLE events_checked_with_calls RENAME TO events;

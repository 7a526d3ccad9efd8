DROP TABLE holds_opened;
CREATE TABLE stock_movements_without_holds (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    pet_id           INTEGER NOT NULL CHECK (pet_id > 0),
    kind             TEXT NOT NULL CHECK (kind IN ('opening', 'set', 'adjusted', 'committed',
                                                   'released', 'sold', 'written_off')),
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
    CHECK ((line_no IS NULL) = (order_id IS NULL)),
    CHECK (CASE kind
        WHEN 'opening' THEN available_change = quantity AND committed_change >= 0
        WHEN 'set' THEN committed_change = 0 AND abs(available_change) = quantity
        WHEN 'adjusted' THEN committed_change = 0 AND abs(available_change) = quantity
        WHEN 'committed' THEN available_change = -quantity AND committed_change = quantity
        WHEN 'released' THEN available_change = quantity AND committed_change = -quantity
        WHEN 'sold' THEN available_change = 0 AND committed_change = -quantity
        WHEN 'written_off' THEN available_change = -quantity AND committed_change = 0
    END)
);
INSERT INTO stock_movements_without_holds (id, pet_id, kind, quantity, available_change,
    committed_change, available_after, committed_after, order_id, line_no, reason, actor,
    request_id, time)
SELECT id, pet_id, kind, quantity, available_change, committed_change, available_after,
    committed_after, order_id, line_no, reason, actor, request_id, time
FROM stock_movements WHERE held_change = 0 AND kind NOT LIKE 'hold%' AND kind <> 'held';
DROP TABLE stock_movements;
ALTER TABLE stock_movements_without_holds RENAME TO stock_movements;
CREATE INDEX stock_movements_by_pet ON stock_movements (pet_id, id);
DROP TRIGGER pet_with_held_units_stays;
DROP TRIGGER hold_ends_once;
DROP TRIGGER hold_ended;
DROP TRIGGER hold_line_placed;
DROP TABLE hold_lines;
DROP TABLE holds;
ALTER TABLE pets DROP COLUMN held;

-- Holds (docs/domain.md, "Holds"): units of pets set aside for a basket until the hold is
-- released, expires or is checked out. Added beside what an older version's node uses; none
-- is placed before `migrate --finish` has begun them (900002_open_holds), so no node that
-- does not count held units serves by then.

-- The units each pet's active holds set aside, kept by the triggers below.
ALTER TABLE pets ADD COLUMN held INTEGER NOT NULL DEFAULT 0 CHECK (held >= 0);

-- A hold, active until `ended` says how it ended. Kept once ended: its ending is what tells a
-- shopper coming back from paying why it is gone, and a consumed hold names its one order
-- (UNIQUE: a hold becomes at most one order). AUTOINCREMENT: ids are never reused.
CREATE TABLE holds (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_id   INTEGER CHECK (owner_id IS NULL OR owner_id > 0),
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    ended      TEXT CHECK (ended IN ('released', 'expired', 'consumed')),
    ended_at   TEXT,
    order_id   INTEGER UNIQUE CHECK (order_id > 0),
    CHECK ((ended IS NULL) = (ended_at IS NULL)),
    CHECK ((order_id IS NOT NULL) = (ended IS 'consumed'))
);
-- The sweeper's one statement: the active holds whose expiry has come, soonest first. Only
-- active holds are in it, so an idle shop's sweep reads an empty index.
CREATE INDEX holds_due ON holds (expires_at, id) WHERE ended IS NULL;

CREATE TABLE hold_lines (
    hold_id  INTEGER NOT NULL REFERENCES holds (id) ON DELETE CASCADE,
    line_no  INTEGER NOT NULL CHECK (line_no BETWEEN 1 AND 50),
    pet_id   INTEGER NOT NULL CHECK (pet_id > 0),
    quantity INTEGER NOT NULL CHECK (quantity BETWEEN 1 AND 1000),
    PRIMARY KEY (hold_id, line_no)
);

-- A line is written with its active hold: its pet must exist, and takes its units in.
CREATE TRIGGER hold_line_placed
BEFORE INSERT ON hold_lines
BEGIN
    SELECT RAISE(ABORT, 'unknown_pet') WHERE NOT EXISTS (SELECT 1 FROM pets WHERE id = NEW.pet_id);
    UPDATE pets SET held = held + NEW.quantity WHERE id = NEW.pet_id;
END;

-- A hold ends once: its pets give its units up; an ended hold never changes again.
CREATE TRIGGER hold_ended
AFTER UPDATE OF ended ON holds
WHEN OLD.ended IS NULL AND NEW.ended IS NOT NULL
BEGIN
    UPDATE pets SET held = held - (SELECT l.quantity FROM hold_lines l
                                   WHERE l.hold_id = NEW.id AND l.pet_id = pets.id)
    WHERE id IN (SELECT pet_id FROM hold_lines WHERE hold_id = NEW.id);
END;

CREATE TRIGGER hold_ends_once
BEFORE UPDATE ON holds
WHEN OLD.ended IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'hold_ended');
END;

-- A pet whose units are held stays, as one with open orders does: an older version's node,
-- which counts only orders, is refused too.
CREATE TRIGGER pet_with_held_units_stays
BEFORE DELETE ON pets
WHEN OLD.held > 0
BEGIN
    SELECT RAISE(ABORT, 'pet_has_open_orders');
END;

-- The ledger gains the third balance and the holds' kinds. SQLite cannot change a table's
-- checks in place, so the table is made again and its rows copied once. Its ids are rowids
-- now (no AUTOINCREMENT): no movement is ever deleted, so a new id is always above every
-- other, and each insert no longer writes sqlite_sequence.
CREATE TABLE stock_movements_with_holds (
    id               INTEGER PRIMARY KEY,
    pet_id           INTEGER NOT NULL CHECK (pet_id > 0),
    kind             TEXT NOT NULL CHECK (kind IN ('opening', 'set', 'adjusted', 'committed',
                                                   'released', 'sold', 'written_off', 'held',
                                                   'hold_released', 'hold_expired',
                                                   'hold_committed')),
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
    END)
);
INSERT INTO stock_movements_with_holds (id, pet_id, kind, quantity, available_change,
    committed_change, available_after, committed_after, order_id, line_no, reason, actor,
    request_id, time)
SELECT id, pet_id, kind, quantity, available_change, committed_change, available_after,
    committed_after, order_id, line_no, reason, actor, request_id, time
FROM stock_movements;
DROP TABLE stock_movements;
ALTER TABLE stock_movements_with_holds RENAME TO stock_movements;
-- Keyset pages of one pet's movements.
CREATE INDEX stock_movements_by_pet ON stock_movements (pet_id, id);

-- One row once holds have begun: a hold is placed only while it is there
-- (900002_open_holds writes it, through `migrate --finish`).
CREATE TABLE holds_opened (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    at TEXT NOT NULL
);

-- The stock ledger (docs/domain.md, "The stock ledger"), added beside what an older version's
-- nodes use: they go on changing stock without it during a rolling upgrade, so nothing is
-- recorded in it until `migrate --finish` begins it (900001_open_stock_ledger).

-- The units in each pet's open orders, kept by triggers on orders as open_orders is, so that
-- an older version's node, which knows neither, keeps it right too.
ALTER TABLE pets ADD COLUMN committed INTEGER NOT NULL DEFAULT 0 CHECK (committed >= 0);
UPDATE pets SET committed = (
    SELECT coalesce(sum(quantity), 0) FROM orders
    WHERE orders.pet_id = pets.id AND orders.complete = 0
);

-- The triggers that keep open_orders keep committed too, in the same UPDATE of the pet's row
-- (a second trigger would write the row twice per order).
DROP TRIGGER open_order_placed;
CREATE TRIGGER open_order_placed
AFTER INSERT ON orders
WHEN NEW.complete = 0
BEGIN
    UPDATE pets SET open_orders = open_orders + 1, committed = committed + NEW.quantity
    WHERE id = NEW.pet_id;
END;

DROP TRIGGER open_order_completed;
CREATE TRIGGER open_order_completed
AFTER UPDATE OF complete ON orders
WHEN OLD.complete = 0 AND NEW.complete = 1
BEGIN
    UPDATE pets SET open_orders = open_orders - 1, committed = committed - OLD.quantity
    WHERE id = NEW.pet_id;
END;

DROP TRIGGER open_order_removed;
CREATE TRIGGER open_order_removed
AFTER DELETE ON orders
WHEN OLD.complete = 0
BEGIN
    UPDATE pets SET open_orders = open_orders - 1, committed = committed - OLD.quantity
    WHERE id = OLD.pet_id;
END;

-- One row per movement of a pet's stock. No foreign key to pets: a deleted pet keeps its
-- history (its last movement writes off what it had). Each kind moves the two balances its
-- own way (petstore_core's `MovementKind`); the table refuses a row whose changes do not fit
-- its kind. AUTOINCREMENT: ids only grow, so a pet's movements read in id order are in the
-- order they were made.
CREATE TABLE stock_movements (
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
-- Keyset pages of one pet's movements.
CREATE INDEX stock_movements_by_pet ON stock_movements (pet_id, id);

-- One row once the ledger has begun; every movement is inserted only while it is there.
CREATE TABLE ledger_opened (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    at TEXT NOT NULL
);

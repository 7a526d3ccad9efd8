-- The catalogue, orders and the event outbox.
--
-- The schema refuses what the domain rules refuse, so a bug above it, or a hand-written
-- statement, cannot store what the rules forbid. The trigger messages are the contract's
-- error codes; petstore-store maps them back.

CREATE TABLE categories (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    -- The name folded to lower case by the application (Unicode-aware, unlike NOCASE):
    -- names are unique regardless of case.
    name_key    TEXT NOT NULL UNIQUE,
    description TEXT CHECK (description IS NULL OR length(description) <= 1000)
);

-- A pet's inventory entry is its stock column: exactly one per pet, created and removed with
-- it, by construction.
CREATE TABLE pets (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    name_key    TEXT NOT NULL,
    category_id INTEGER NOT NULL REFERENCES categories (id) ON DELETE RESTRICT,
    status      TEXT NOT NULL CHECK (status IN ('available', 'pending', 'sold')),
    stock       INTEGER NOT NULL DEFAULT 0 CHECK (stock >= 0),
    -- Kept by the triggers on orders below, so the rules read it in O(1) however many
    -- orders a pet has, and no statement, ours or a hand's, can make it drift.
    open_orders INTEGER NOT NULL DEFAULT 0 CHECK (open_orders >= 0)
);
-- Keyset pages filtered by status or category read only the rows they return.
CREATE INDEX pets_by_status ON pets (status, id);
CREATE INDEX pets_by_category ON pets (category_id, id);

-- No foreign key to pets: a complete order outlives its pet (it records a sale). The triggers
-- below keep open orders pointing at a pet that exists.
CREATE TABLE orders (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    pet_id    INTEGER NOT NULL CHECK (pet_id > 0),
    quantity  INTEGER NOT NULL CHECK (quantity BETWEEN 1 AND 1000),
    ship_date TEXT,
    complete  INTEGER NOT NULL DEFAULT 0 CHECK (complete IN (0, 1)),
    owner_id  INTEGER CHECK (owner_id IS NULL OR owner_id > 0)
);
-- Keyset pages of one pet's, one owner's, or open/complete orders.
CREATE INDEX orders_by_pet ON orders (pet_id, id);
CREATE INDEX orders_by_owner ON orders (owner_id, id);
CREATE INDEX orders_by_completion ON orders (complete, id);

CREATE TRIGGER orders_need_a_pet
BEFORE INSERT ON orders
WHEN NOT EXISTS (SELECT 1 FROM pets WHERE id = NEW.pet_id)
BEGIN
    SELECT RAISE(ABORT, 'unknown_pet');
END;

CREATE TRIGGER pets_with_open_orders_stay
BEFORE DELETE ON pets
WHEN OLD.open_orders > 0
BEGIN
    SELECT RAISE(ABORT, 'pet_has_open_orders');
END;

CREATE TRIGGER complete_orders_stay_complete
BEFORE UPDATE ON orders
WHEN OLD.complete = 1 AND (NEW.complete = 0 OR NEW.pet_id <> OLD.pet_id OR NEW.quantity <> OLD.quantity)
BEGIN
    SELECT RAISE(ABORT, 'invalid_transition');
END;

CREATE TRIGGER complete_orders_are_not_cancelled
BEFORE DELETE ON orders
WHEN OLD.complete = 1
BEGIN
    SELECT RAISE(ABORT, 'order_not_cancellable');
END;

CREATE TRIGGER open_order_placed
AFTER INSERT ON orders
WHEN NEW.complete = 0
BEGIN
    UPDATE pets SET open_orders = open_orders + 1 WHERE id = NEW.pet_id;
END;

CREATE TRIGGER open_order_completed
AFTER UPDATE OF complete ON orders
WHEN OLD.complete = 0 AND NEW.complete = 1
BEGIN
    UPDATE pets SET open_orders = open_orders - 1 WHERE id = NEW.pet_id;
END;

CREATE TRIGGER open_order_removed
AFTER DELETE ON orders
WHEN OLD.complete = 0
BEGIN
    UPDATE pets SET open_orders = open_orders - 1 WHERE id = OLD.pet_id;
END;

-- The transactional outbox: written in the same transaction as the change it records.
-- AUTOINCREMENT: ids only grow, even after the newest rows are deleted.
CREATE TABLE events (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    time    TEXT NOT NULL,
    type    TEXT NOT NULL,
    subject TEXT NOT NULL,
    data    TEXT NOT NULL CHECK (json_valid(data))
);

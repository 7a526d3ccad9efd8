-- Orders of several lines (a checkout's). Line 1 stays in the order's row (pet_id, quantity,
-- unit_amount, currency), so a one-line order is one row to write and read, as before; lines 2
-- and on are rows of order_lines, and line_count tells a reader whether to look there.
-- Additive: an older version's node never writes a line past the first. It would read such an
-- order as its first line alone, so none is written before `migrate --finish` has begun the
-- stock ledger (the service refuses such a checkout until then).
ALTER TABLE orders ADD COLUMN line_count INTEGER NOT NULL DEFAULT 1
    CHECK (line_count BETWEEN 1 AND 50);

CREATE TABLE order_lines (
    order_id    INTEGER NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    line_no     INTEGER NOT NULL CHECK (line_no BETWEEN 2 AND 50),
    pet_id      INTEGER NOT NULL CHECK (pet_id > 0),
    quantity    INTEGER NOT NULL CHECK (quantity BETWEEN 1 AND 1000),
    unit_amount INTEGER CHECK (unit_amount BETWEEN 0 AND 99999999999),
    currency    TEXT CHECK ((currency IS NULL) = (unit_amount IS NULL)),
    PRIMARY KEY (order_id, line_no)
);
-- Orders naming a pet on any line (`listOrders?petId=`), and a pet's open lines.
CREATE INDEX order_lines_by_pet ON order_lines (pet_id, order_id);

-- A line is written with its open order; its pet's counts of open orders and their units
-- take it in, as they do line 1 (open_order_placed, open_order_commits_units).
CREATE TRIGGER order_lines_need_a_pet
BEFORE INSERT ON order_lines
WHEN NOT EXISTS (SELECT 1 FROM pets WHERE id = NEW.pet_id)
BEGIN
    SELECT RAISE(ABORT, 'unknown_pet');
END;

CREATE TRIGGER open_order_line_placed
AFTER INSERT ON order_lines
BEGIN
    UPDATE pets SET open_orders = open_orders + 1, committed = committed + NEW.quantity
    WHERE id = NEW.pet_id;
END;

-- Completing or cancelling an order acts on every line: the pets of lines 2 and on give the
-- order up as line 1's pet does. (A complete order is never deleted, so its lines are not
-- counted twice; lines go with their order.)
CREATE TRIGGER open_order_lines_completed
AFTER UPDATE OF complete ON orders
WHEN OLD.complete = 0 AND NEW.complete = 1 AND NEW.line_count > 1
BEGIN
    UPDATE pets SET open_orders = open_orders - 1,
        committed = committed - (SELECT l.quantity FROM order_lines l
                                 WHERE l.order_id = NEW.id AND l.pet_id = pets.id)
    WHERE id IN (SELECT pet_id FROM order_lines WHERE order_id = NEW.id);
END;

CREATE TRIGGER open_order_lines_removed
BEFORE DELETE ON orders
WHEN OLD.complete = 0 AND OLD.line_count > 1
BEGIN
    UPDATE pets SET open_orders = open_orders - 1,
        committed = committed - (SELECT l.quantity FROM order_lines l
                                 WHERE l.order_id = OLD.id AND l.pet_id = pets.id)
    WHERE id IN (SELECT pet_id FROM order_lines WHERE order_id = OLD.id);
END;

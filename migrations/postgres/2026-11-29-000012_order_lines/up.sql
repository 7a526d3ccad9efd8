-- Orders of several lines (a checkout's). Line 1 stays in the order's row (pet_id, quantity,
-- unit_amount, currency), so a one-line order is one row to write and read, as before; lines 2
-- and on are rows of order_lines, and line_count tells a reader whether to look there.
-- Additive: an older version's node never writes a line past the first. It would read such an
-- order as its first line alone, so none is written before `migrate --finish` has begun the
-- stock ledger (the service refuses such a checkout until then).
ALTER TABLE orders ADD COLUMN line_count bigint NOT NULL DEFAULT 1
    CHECK (line_count BETWEEN 1 AND 50);

CREATE TABLE order_lines (
    order_id    bigint NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    line_no     bigint NOT NULL CHECK (line_no BETWEEN 2 AND 50),
    pet_id      bigint NOT NULL CHECK (pet_id > 0),
    quantity    bigint NOT NULL CHECK (quantity BETWEEN 1 AND 1000),
    unit_amount bigint CHECK (unit_amount BETWEEN 0 AND 99999999999),
    currency    text,
    CONSTRAINT order_lines_price_whole CHECK ((currency IS NULL) = (unit_amount IS NULL)),
    PRIMARY KEY (order_id, line_no)
);
-- Orders naming a pet on any line (`listOrders?petId=`), and a pet's open lines.
CREATE INDEX order_lines_by_pet ON order_lines (pet_id, order_id);

-- A line is written with its open order: its pet must exist (and is locked against deletion
-- until the order commits), and its counts of open orders and their units take it in, as
-- they do line 1.
CREATE FUNCTION order_lines_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM pets WHERE id = NEW.pet_id FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown_pet' USING ERRCODE = 'P0001';
    END IF;
    UPDATE pets SET open_orders = open_orders + 1, committed = committed + NEW.quantity
    WHERE id = NEW.pet_id;
    RETURN NEW;
END;
$$;

CREATE TRIGGER order_lines_guard
BEFORE INSERT ON order_lines
FOR EACH ROW EXECUTE FUNCTION order_lines_guard();

-- Completing or cancelling an order acts on every line: the pets of lines 2 and on give the
-- order up as line 1's pet does.
CREATE OR REPLACE FUNCTION orders_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        -- The pet row is locked, so it cannot be deleted before this order commits.
        PERFORM 1 FROM pets WHERE id = NEW.pet_id FOR KEY SHARE;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'unknown_pet' USING ERRCODE = 'P0001';
        END IF;
        IF NOT NEW.complete THEN
            UPDATE pets SET open_orders = open_orders + 1, committed = committed + NEW.quantity
            WHERE id = NEW.pet_id;
        END IF;
        RETURN NEW;
    ELSIF TG_OP = 'UPDATE' THEN
        IF OLD.complete AND (NOT NEW.complete OR NEW.pet_id <> OLD.pet_id
                             OR NEW.quantity <> OLD.quantity) THEN
            RAISE EXCEPTION 'invalid_transition' USING ERRCODE = 'P0001';
        END IF;
        IF NOT OLD.complete AND NEW.complete THEN
            UPDATE pets SET open_orders = open_orders - 1, committed = committed - OLD.quantity
            WHERE id = NEW.pet_id;
            IF NEW.line_count > 1 THEN
                UPDATE pets SET open_orders = pets.open_orders - 1,
                    committed = pets.committed - l.quantity
                FROM order_lines l WHERE l.order_id = NEW.id AND pets.id = l.pet_id;
            END IF;
        END IF;
        RETURN NEW;
    ELSE
        IF OLD.complete THEN
            RAISE EXCEPTION 'order_not_cancellable' USING ERRCODE = 'P0001';
        END IF;
        UPDATE pets SET open_orders = open_orders - 1, committed = committed - OLD.quantity
        WHERE id = OLD.pet_id;
        IF OLD.line_count > 1 THEN
            UPDATE pets SET open_orders = pets.open_orders - 1,
                committed = pets.committed - l.quantity
            FROM order_lines l WHERE l.order_id = OLD.id AND pets.id = l.pet_id;
        END IF;
        RETURN OLD;
    END IF;
END;
$$;

-- The two tables as they were: records ordered by (owner, key), and lines in a rowid table
-- whose key to `orders` is checked by each statement.
CREATE TABLE idempotency_records_by_key (
    owner_id         INTEGER NOT NULL CHECK (owner_id > 0),
    idempotency_key  TEXT NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    fingerprint      BLOB NOT NULL CHECK (length(fingerprint) = 32),
    response         BLOB NOT NULL,
    recorded_at      TEXT NOT NULL,
    PRIMARY KEY (owner_id, idempotency_key)
) WITHOUT ROWID;
INSERT INTO idempotency_records_by_key (owner_id, idempotency_key, fingerprint, response,
    recorded_at)
SELECT owner_id, idempotency_key, fingerprint, response, recorded_at FROM idempotency_records;
DROP TABLE idempotency_records;
ALTER TABLE idempotency_records_by_key RENAME TO idempotency_records;
CREATE INDEX idempotency_records_by_age ON idempotency_records (recorded_at);

DROP TRIGGER open_order_lines_completed;
DROP TRIGGER open_order_lines_removed;
CREATE TABLE order_lines_with_rowids (
    order_id    INTEGER NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    line_no     INTEGER NOT NULL CHECK (line_no BETWEEN 2 AND 50),
    pet_id      INTEGER NOT NULL CHECK (pet_id > 0),
    quantity    INTEGER NOT NULL CHECK (quantity BETWEEN 1 AND 1000),
    unit_amount INTEGER CHECK (unit_amount BETWEEN 0 AND 99999999999),
    currency    TEXT CHECK ((currency IS NULL) = (unit_amount IS NULL)),
    PRIMARY KEY (order_id, line_no)
);
INSERT INTO order_lines_with_rowids (order_id, line_no, pet_id, quantity, unit_amount,
    currency)
SELECT order_id, line_no, pet_id, quantity, unit_amount, currency FROM order_lines;
DROP TABLE order_lines;
ALTER TABLE order_lines_with_rowids RENAME TO order_lines;
CREATE INDEX order_lines_by_pet ON order_lines (pet_id, order_id);
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

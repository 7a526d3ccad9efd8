-- Two tables made again for what an insert costs them, their columns and rules unchanged.
--
-- `idempotency_records` kept each record, its recorded answer inline, in a table ordered by
-- (owner, key): a fresh key lands at a random place among rows of a kilobyte or more, so every
-- few inserts split a page and wrote its neighbours and parent out too. Now its rows are
-- appended in a rowid table, and only the key goes in a random place, in the primary key's
-- index, whose entries are small.
--
-- `order_lines`: a checkout's lines 2 and on are one `INSERT` of several rows, and an
-- immediate foreign key counts as a way for such a statement to abort, so SQLite kept a
-- statement journal for it (a copy of every page it changes). The key to `orders` is checked
-- at the commit instead (`DEFERRABLE INITIALLY DEFERRED`); a line is always written in the
-- transaction of its order, so it never fails there, and deleting an order still deletes its
-- lines at once. The lines are stored in their primary key's order, the order they are
-- written in, rather than in a rowid table beside an index of that key.
CREATE TABLE idempotency_records_appended (
    owner_id         INTEGER NOT NULL CHECK (owner_id > 0),
    idempotency_key  TEXT NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    fingerprint      BLOB NOT NULL CHECK (length(fingerprint) = 32),
    response         BLOB NOT NULL,
    recorded_at      TEXT NOT NULL,
    PRIMARY KEY (owner_id, idempotency_key)
);
INSERT INTO idempotency_records_appended (owner_id, idempotency_key, fingerprint, response,
    recorded_at)
SELECT owner_id, idempotency_key, fingerprint, response, recorded_at
FROM idempotency_records ORDER BY recorded_at;
DROP TABLE idempotency_records;
ALTER TABLE idempotency_records_appended RENAME TO idempotency_records;
CREATE INDEX idempotency_records_by_age ON idempotency_records (recorded_at);

-- The triggers on `orders` that read the lines name the table: SQLite checks every trigger
-- when a table is renamed, so they go while it is missing and come back as they were.
DROP TRIGGER open_order_lines_completed;
DROP TRIGGER open_order_lines_removed;
CREATE TABLE order_lines_in_key_order (
    order_id    INTEGER NOT NULL
                REFERENCES orders (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    line_no     INTEGER NOT NULL CHECK (line_no BETWEEN 2 AND 50),
    pet_id      INTEGER NOT NULL CHECK (pet_id > 0),
    quantity    INTEGER NOT NULL CHECK (quantity BETWEEN 1 AND 1000),
    unit_amount INTEGER CHECK (unit_amount BETWEEN 0 AND 99999999999),
    currency    TEXT CHECK ((currency IS NULL) = (unit_amount IS NULL)),
    PRIMARY KEY (order_id, line_no)
) WITHOUT ROWID;
INSERT INTO order_lines_in_key_order (order_id, line_no, pet_id, quantity, unit_amount,
    currency)
SELECT order_id, line_no, pet_id, quantity, unit_amount, currency FROM order_lines;
DROP TABLE order_lines;
ALTER TABLE order_lines_in_key_order RENAME TO order_lines;
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

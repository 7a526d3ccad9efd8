DROP TABLE ledger_opened;
DROP TABLE stock_movements;
DROP TRIGGER open_order_removed;
CREATE TRIGGER open_order_removed
AFTER DELETE ON orders
WHEN OLD.complete = 0
BEGIN
    UPDATE pets SET open_orders = open_orders - 1 WHERE id = OLD.pet_id;
END;
DROP TRIGGER open_order_completed;
CREATE TRIGGER open_order_completed
AFTER UPDATE OF complete ON orders
WHEN OLD.complete = 0 AND NEW.complete = 1
BEGIN
    UPDATE pets SET open_orders = open_orders - 1 WHERE id = NEW.pet_id;
END;
DROP TRIGGER open_order_placed;
CREATE TRIGGER open_order_placed
AFTER INSERT ON orders
WHEN NEW.complete = 0
BEGIN
    UPDATE pets SET open_orders = open_orders + 1 WHERE id = NEW.pet_id;
END;
ALTER TABLE pets DROP COLUMN committed;

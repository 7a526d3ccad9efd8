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

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

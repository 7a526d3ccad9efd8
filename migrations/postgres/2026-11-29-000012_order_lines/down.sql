DROP TRIGGER order_lines_guard ON order_lines;
DROP FUNCTION order_lines_guard();
DROP TABLE order_lines;
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
        END IF;
        RETURN NEW;
    ELSE
        IF OLD.complete THEN
            RAISE EXCEPTION 'order_not_cancellable' USING ERRCODE = 'P0001';
        END IF;
        UPDATE pets SET open_orders = open_orders - 1, committed = committed - OLD.quantity
        WHERE id = OLD.pet_id;
        RETURN OLD;
    END IF;
END;
$$;
ALTER TABLE orders DROP COLUMN line_count;

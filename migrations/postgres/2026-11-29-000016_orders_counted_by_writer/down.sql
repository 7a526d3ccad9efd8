-- The trigger counts every order's first line again, whatever its transaction says.
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

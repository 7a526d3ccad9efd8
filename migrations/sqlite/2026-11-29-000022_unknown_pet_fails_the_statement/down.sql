DROP TRIGGER orders_need_a_pet;
CREATE TRIGGER orders_need_a_pet
BEFORE INSERT ON orders
WHEN NOT EXISTS (SELECT 1 FROM pets WHERE id = NEW.pet_id)
BEGIN
    SELECT RAISE(ABORT, 'unknown_pet');
END;

-- An order for a pet that does not exist fails the statement (`RAISE(FAIL)`) rather than
-- aborting it: nothing was written when the check runs, before the row, so there is nothing to
-- undo, and an `ABORT` anywhere in a statement makes SQLite keep a statement journal for it (a
-- copy of each page it changes). The service inserts orders `OR FAIL` (`sqlite/prepared.rs`).
DROP TRIGGER orders_need_a_pet;
CREATE TRIGGER orders_need_a_pet
BEFORE INSERT ON orders
WHEN NOT EXISTS (SELECT 1 FROM pets WHERE id = NEW.pet_id)
BEGIN
    SELECT RAISE(FAIL, 'unknown_pet');
END;

-- Lines 2 and on are counted into their pet's open orders and committed units by the service
-- that writes them, in a statement of its own, not by triggers: an insert that fires a trigger
-- keeps a statement journal, a copy of every page it changes, and a checkout wrote one for
-- each line. Only this version writes these lines (an older node writes an order's first
-- line, in its row, and the triggers on orders still count that); the service locked each
-- line's pet before it, so the pet is there.
DROP TRIGGER open_order_line_placed;
DROP TRIGGER order_lines_need_a_pet;

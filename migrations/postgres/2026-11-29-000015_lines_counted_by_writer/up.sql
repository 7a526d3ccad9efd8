-- Lines 2 and on are counted into their pet's open orders and committed units by the service
-- that writes them, in the statement that sets the burst's stock levels, not by a trigger
-- that updated the pet's row a second time for each line. Only this version writes these
-- lines (an older node writes an order's first line, in its row, and orders_guard still
-- counts that); the burst locked each line's pet before it, so the pet is there.
DROP TRIGGER order_lines_guard ON order_lines;
DROP FUNCTION order_lines_guard();

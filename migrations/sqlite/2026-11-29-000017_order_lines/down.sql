DROP TRIGGER open_order_lines_removed;
DROP TRIGGER open_order_lines_completed;
DROP TRIGGER open_order_line_placed;
DROP TRIGGER order_lines_need_a_pet;
DROP TABLE order_lines;
ALTER TABLE orders DROP COLUMN line_count;

ALTER TABLE orders DROP COLUMN currency;
ALTER TABLE orders DROP COLUMN unit_amount;

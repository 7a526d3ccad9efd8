ALTER TABLE orders DROP COLUMN currency, DROP COLUMN unit_amount;

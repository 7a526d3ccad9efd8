ALTER TABLE pets DROP COLUMN price_currency, DROP COLUMN price_amount;
DROP TABLE shop;

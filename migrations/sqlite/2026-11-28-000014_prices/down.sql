ALTER TABLE pets DROP COLUMN price_currency;
ALTER TABLE pets DROP COLUMN price_amount;
DROP TABLE shop;

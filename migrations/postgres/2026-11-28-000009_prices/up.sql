-- The shop: one row, written when the service first starts on this database, holding the
-- currency every price is in (ISO 4217). Chosen once: a start with another currency is
-- refused.
CREATE TABLE shop (
    id       bigint PRIMARY KEY CHECK (id = 1),
    currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$')
);

-- A pet's price, in integer minor units of its currency (the shop's), or none. Both or
-- neither: an amount never stands without its currency. Additive: an older version's nodes
-- never read or write them, and replace a pet without touching its price.
ALTER TABLE pets
    ADD COLUMN price_amount bigint CHECK (price_amount BETWEEN 0 AND 99999999999),
    ADD COLUMN price_currency text,
    ADD CONSTRAINT pets_price_whole CHECK ((price_currency IS NULL) = (price_amount IS NULL));

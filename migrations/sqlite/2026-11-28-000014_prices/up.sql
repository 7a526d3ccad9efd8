-- The shop: one row, written when the service first starts on this database, holding the
-- currency every price is in (ISO 4217). Chosen once: a start with another currency is
-- refused.
CREATE TABLE shop (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    currency TEXT NOT NULL CHECK (currency GLOB '[A-Z][A-Z][A-Z]')
);

-- A pet's price, in integer minor units of its currency (the shop's), or none. Both or
-- neither: an amount never stands without its currency. Additive: an older version's nodes
-- never read or write them, and replace a pet without touching its price.
ALTER TABLE pets ADD COLUMN price_amount INTEGER
    CHECK (price_amount BETWEEN 0 AND 99999999999);
ALTER TABLE pets ADD COLUMN price_currency TEXT
    CHECK ((price_currency IS NULL) = (price_amount IS NULL));

-- The unit price an order's pet had when the order was placed, in the shop's currency (both
-- or neither): the order's one line keeps it whatever the pet's price does afterwards. None
-- for an order of a pet without a price, and for one an older version's node placed (it
-- knows neither column). The line's amount and the order's total are unit_amount × quantity.
ALTER TABLE orders ADD COLUMN unit_amount INTEGER
    CHECK (unit_amount BETWEEN 0 AND 99999999999);
ALTER TABLE orders ADD COLUMN currency TEXT
    CHECK ((currency IS NULL) = (unit_amount IS NULL));

-- The stock ledger begins, once no node of an older version is left to change stock without
-- it (this finishes an upgrade: `petstore migrate --finish`; a new database runs it at once).
-- In one transaction: each pet's units in open orders counted afresh, an opening movement per
-- pet with its balances, and the row that lets every movement after it be recorded.

UPDATE pets SET committed = (
    SELECT coalesce(sum(quantity), 0) FROM orders
    WHERE orders.pet_id = pets.id AND orders.complete = 0
)
WHERE NOT EXISTS (SELECT 1 FROM ledger_opened);

INSERT INTO stock_movements (pet_id, kind, quantity, available_change, committed_change,
                             available_after, committed_after, time)
SELECT id, 'opening', stock, stock, committed, stock, committed,
       strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'
FROM pets
WHERE NOT EXISTS (SELECT 1 FROM ledger_opened)
ORDER BY id;

INSERT INTO ledger_opened (id, at)
SELECT 1, strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'
WHERE NOT EXISTS (SELECT 1 FROM ledger_opened);

-- The stock ledger begins, once no node of an older version is left to change stock without
-- it (this finishes an upgrade: `petstore migrate --finish`; a new database runs it at once).
-- In one transaction: each pet's units in open orders counted afresh, an opening movement per
-- pet with its balances, and the row that lets every movement after it be recorded.
--
-- Nodes keep serving meanwhile. Every change of stock or of an open order writes its pet's row
-- (an order's through the trigger on orders), so this waits for the writers that changed a
-- pet to commit (their movements, written before this commits, are not recorded: the opening
-- includes what they did), and the writers after it wait for this to commit (their movements,
-- recorded, follow the opening). It locks nothing else, so no writer can wait for it while it
-- waits for that writer.
LOCK TABLE pets IN SHARE MODE;

UPDATE pets SET committed = coalesce(o.units, 0)
FROM pets p LEFT JOIN (
    SELECT pet_id, sum(quantity) AS units FROM orders WHERE NOT complete GROUP BY pet_id
) o ON o.pet_id = p.id
WHERE pets.id = p.id AND pets.committed <> coalesce(o.units, 0)
  AND NOT EXISTS (SELECT 1 FROM ledger_opened);

INSERT INTO stock_movements (pet_id, kind, quantity, available_change, committed_change,
                             available_after, committed_after, time)
SELECT id, 'opening', stock, stock, committed, stock, committed, now()
FROM pets
WHERE NOT EXISTS (SELECT 1 FROM ledger_opened)
ORDER BY id;

INSERT INTO ledger_opened (id, at)
SELECT 1, now()
WHERE NOT EXISTS (SELECT 1 FROM ledger_opened);

DROP TABLE ledger_opened;
DROP TABLE stock_movements;
DROP TRIGGER removed_order_gives_its_units_back;
DROP TRIGGER completed_order_takes_its_units;
DROP TRIGGER open_order_commits_units;
ALTER TABLE pets DROP COLUMN committed;

DELETE FROM ledger_opened;
DELETE FROM stock_movements;

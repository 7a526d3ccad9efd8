DROP TABLE holds_opened;

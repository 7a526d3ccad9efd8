DELETE FROM holds_opened;

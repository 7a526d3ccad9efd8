DROP INDEX pets_by_name;
ALTER TABLE pets ALTER COLUMN name_key TYPE text COLLATE "default";

DROP INDEX pets_by_name;

DROP TRIGGER api_keys_are_not_deleted;
DROP TABLE api_keys;

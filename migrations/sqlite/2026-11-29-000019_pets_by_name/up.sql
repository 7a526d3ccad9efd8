-- Lists of pets by name page by keyset on (name_key, id); SQLite compares text byte by byte.
CREATE INDEX pets_by_name ON pets (name_key, id);

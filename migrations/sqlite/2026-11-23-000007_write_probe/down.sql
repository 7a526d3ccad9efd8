DROP TABLE write_probe;

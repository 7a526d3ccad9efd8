DROP TABLE node_heartbeats;

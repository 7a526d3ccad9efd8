-- Each serving node's heartbeat: the newest migration it knows, and when it was last seen (Unix
-- seconds). `petstore migrate --finish` refuses while a node that knows fewer is alive.
CREATE TABLE node_heartbeats (
    node TEXT PRIMARY KEY NOT NULL,
    schema_version TEXT NOT NULL,
    seen_at INTEGER NOT NULL
);

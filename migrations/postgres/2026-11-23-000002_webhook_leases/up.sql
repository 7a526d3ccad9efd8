-- Who sends a subscription's events, until when: with several nodes, only the holder of an
-- unexpired lease sends, so each event goes out once and in order; a node that dies stops
-- renewing and another takes over when the lease ends.
ALTER TABLE webhooks ADD COLUMN leased_by text;
ALTER TABLE webhooks ADD COLUMN leased_until timestamptz;

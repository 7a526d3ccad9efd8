-- Who sends a subscription's events, until when: with several sending processes, only the
-- holder of an unexpired lease sends, so each event goes out once and in order; a holder that
-- dies stops renewing and another takes over when the lease ends.
ALTER TABLE webhooks ADD COLUMN leased_by TEXT;
ALTER TABLE webhooks ADD COLUMN leased_until TEXT;

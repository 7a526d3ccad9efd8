ALTER TABLE webhooks DROP COLUMN leased_until;
ALTER TABLE webhooks DROP COLUMN leased_by;

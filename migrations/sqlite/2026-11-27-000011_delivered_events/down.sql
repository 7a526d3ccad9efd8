ALTER TABLE webhooks DROP COLUMN delivered_events;

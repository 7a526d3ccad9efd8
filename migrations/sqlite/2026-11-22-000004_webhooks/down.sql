DROP INDEX webhook_deliveries_by_webhook;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;

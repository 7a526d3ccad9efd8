-- The W3C traceparent of the request that caused each event, sent on with its webhook
-- deliveries. Older events, and changes made without one, have none.
ALTER TABLE events ADD COLUMN traceparent TEXT;

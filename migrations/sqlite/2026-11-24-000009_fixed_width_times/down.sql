-- Back to the shortest of none, 3 or 6 fraction digits that holds the value, as the service
-- wrote times before; any older version of the service reads either form.

UPDATE orders SET ship_date = CASE WHEN substr(ship_date, 21, 6) = '000000' THEN substr(ship_date, 1, 19) || 'Z' WHEN substr(ship_date, 24, 3) = '000' THEN substr(ship_date, 1, 23) || 'Z' ELSE ship_date END
WHERE ship_date GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z';

UPDATE events SET time = CASE WHEN substr(time, 21, 6) = '000000' THEN substr(time, 1, 19) || 'Z' WHEN substr(time, 24, 3) = '000' THEN substr(time, 1, 23) || 'Z' ELSE time END
WHERE time GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z';

UPDATE api_keys SET created_at = CASE WHEN substr(created_at, 21, 6) = '000000' THEN substr(created_at, 1, 19) || 'Z' WHEN substr(created_at, 24, 3) = '000' THEN substr(created_at, 1, 23) || 'Z' ELSE created_at END
WHERE created_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z';

UPDATE api_keys SET revoked_at = CASE WHEN substr(revoked_at, 21, 6) = '000000' THEN substr(revoked_at, 1, 19) || 'Z' WHEN substr(revoked_at, 24, 3) = '000' THEN substr(revoked_at, 1, 23) || 'Z' ELSE revoked_at END
WHERE revoked_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z';

UPDATE idempotency_records SET recorded_at = CASE WHEN substr(recorded_at, 21, 6) = '000000' THEN substr(recorded_at, 1, 19) || 'Z' WHEN substr(recorded_at, 24, 3) = '000' THEN substr(recorded_at, 1, 23) || 'Z' ELSE recorded_at END
WHERE recorded_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z';

UPDATE webhooks SET created_at = CASE WHEN substr(created_at, 21, 6) = '000000' THEN substr(created_at, 1, 19) || 'Z' WHEN substr(created_at, 24, 3) = '000' THEN substr(created_at, 1, 23) || 'Z' ELSE created_at END
WHERE created_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z';

UPDATE webhooks SET next_attempt_at = CASE WHEN substr(next_attempt_at, 21, 6) = '000000' THEN substr(next_attempt_at, 1, 19) || 'Z' WHEN substr(next_attempt_at, 24, 3) = '000' THEN substr(next_attempt_at, 1, 23) || 'Z' ELSE next_attempt_at END
WHERE next_attempt_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z';

UPDATE webhooks SET leased_until = CASE WHEN substr(leased_until, 21, 6) = '000000' THEN substr(leased_until, 1, 19) || 'Z' WHEN substr(leased_until, 24, 3) = '000' THEN substr(leased_until, 1, 23) || 'Z' ELSE leased_until END
WHERE leased_until GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z';

UPDATE webhook_deliveries SET attempted_at = CASE WHEN substr(attempted_at, 21, 6) = '000000' THEN substr(attempted_at, 1, 19) || 'Z' WHEN substr(attempted_at, 24, 3) = '000' THEN substr(attempted_at, 1, 23) || 'Z' ELSE attempted_at END
WHERE attempted_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z';

UPDATE webhook_deliveries SET next_attempt_at = CASE WHEN substr(next_attempt_at, 21, 6) = '000000' THEN substr(next_attempt_at, 1, 19) || 'Z' WHEN substr(next_attempt_at, 24, 3) = '000' THEN substr(next_attempt_at, 1, 23) || 'Z' ELSE next_attempt_at END
WHERE next_attempt_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]Z';

-- Every time becomes RFC 3339 text in UTC of one width, with six fraction digits
-- ("2026-11-24T20:45:29.123456Z"). Until now a time kept as many digits as it needed (none,
-- 3, 6 or 9), so comparing two as text, as the statements do ("recorded before a day ago", "a
-- lease that ran out"), could be wrong: "…05.5Z" sorts before "…05Z". Of one width, text
-- order is time order. Six digits are PostgreSQL's precision, so a time reads the same on
-- either backend and survives a copy between them; the digits past the sixth are dropped, as
-- PostgreSQL drops them.
--
-- Only values in the form the service wrote are changed; anything else is left for the
-- service to report as corrupt when it reads it.

UPDATE orders SET ship_date = substr(ship_date, 1, 19) || '.' || substr(CASE WHEN substr(ship_date, 20, 1) = '.' THEN substr(ship_date, 21, length(ship_date) - 21) ELSE '' END || '000000', 1, 6) || 'Z'
WHERE ship_date GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]*Z';

UPDATE events SET time = substr(time, 1, 19) || '.' || substr(CASE WHEN substr(time, 20, 1) = '.' THEN substr(time, 21, length(time) - 21) ELSE '' END || '000000', 1, 6) || 'Z'
WHERE time GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]*Z';

UPDATE api_keys SET created_at = substr(created_at, 1, 19) || '.' || substr(CASE WHEN substr(created_at, 20, 1) = '.' THEN substr(created_at, 21, length(created_at) - 21) ELSE '' END || '000000', 1, 6) || 'Z'
WHERE created_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]*Z';

UPDATE api_keys SET revoked_at = substr(revoked_at, 1, 19) || '.' || substr(CASE WHEN substr(revoked_at, 20, 1) = '.' THEN substr(revoked_at, 21, length(revoked_at) - 21) ELSE '' END || '000000', 1, 6) || 'Z'
WHERE revoked_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]*Z';

UPDATE idempotency_records SET recorded_at = substr(recorded_at, 1, 19) || '.' || substr(CASE WHEN substr(recorded_at, 20, 1) = '.' THEN substr(recorded_at, 21, length(recorded_at) - 21) ELSE '' END || '000000', 1, 6) || 'Z'
WHERE recorded_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]*Z';

UPDATE webhooks SET created_at = substr(created_at, 1, 19) || '.' || substr(CASE WHEN substr(created_at, 20, 1) = '.' THEN substr(created_at, 21, length(created_at) - 21) ELSE '' END || '000000', 1, 6) || 'Z'
WHERE created_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]*Z';

UPDATE webhooks SET next_attempt_at = substr(next_attempt_at, 1, 19) || '.' || substr(CASE WHEN substr(next_attempt_at, 20, 1) = '.' THEN substr(next_attempt_at, 21, length(next_attempt_at) - 21) ELSE '' END || '000000', 1, 6) || 'Z'
WHERE next_attempt_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]*Z';

UPDATE webhooks SET leased_until = substr(leased_until, 1, 19) || '.' || substr(CASE WHEN substr(leased_until, 20, 1) = '.' THEN substr(leased_until, 21, length(leased_until) - 21) ELSE '' END || '000000', 1, 6) || 'Z'
WHERE leased_until GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]*Z';

UPDATE webhook_deliveries SET attempted_at = substr(attempted_at, 1, 19) || '.' || substr(CASE WHEN substr(attempted_at, 20, 1) = '.' THEN substr(attempted_at, 21, length(attempted_at) - 21) ELSE '' END || '000000', 1, 6) || 'Z'
WHERE attempted_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]*Z';

UPDATE webhook_deliveries SET next_attempt_at = substr(next_attempt_at, 1, 19) || '.' || substr(CASE WHEN substr(next_attempt_at, 20, 1) = '.' THEN substr(next_attempt_at, 21, length(next_attempt_at) - 21) ELSE '' END || '000000', 1, 6) || 'Z'
WHERE next_attempt_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]*Z';

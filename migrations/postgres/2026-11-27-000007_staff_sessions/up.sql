-- The staff console's sessions (docs/console.md), shared by every node: each under the SHA-256
-- hash of its token (the token itself is only ever in the browser's cookie), with the key it
-- acts as. Signing out, revoking the key and the next sign-in after a session ended delete
-- rows; a key is never deleted, so the reference always holds.
CREATE TABLE staff_sessions (
    token_hash bytea PRIMARY KEY CHECK (octet_length(token_hash) = 32),
    key_id     bigint NOT NULL REFERENCES api_keys (id),
    started_at timestamptz NOT NULL,
    seen_at    timestamptz NOT NULL
);
CREATE INDEX staff_sessions_by_key ON staff_sessions (key_id);

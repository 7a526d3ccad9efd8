-- The whole schema on PostgreSQL, with the guarantees of the SQLite schema (migrations/sqlite)
-- in PostgreSQL's own types: identity keys, timestamptz, jsonb, CHECKs, and triggers whose
-- messages are the contract's error codes (petstore-store maps them back).
--
-- Times are timestamptz; the SQLite schema keeps RFC 3339 text instead. Booleans are boolean.

CREATE TABLE categories (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
    -- The name folded to lower case by the application (Unicode-aware, the same function in
    -- every store): names are unique regardless of case.
    name_key    text NOT NULL UNIQUE,
    description text CHECK (description IS NULL OR char_length(description) <= 1000)
);

-- A pet's inventory entry is its stock column: exactly one per pet, created and removed with
-- it. Stock never goes negative, whatever runs the statement.
CREATE TABLE pets (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
    name_key    text NOT NULL,
    category_id bigint NOT NULL REFERENCES categories (id) ON DELETE RESTRICT,
    status      text NOT NULL CHECK (status IN ('available', 'pending', 'sold')),
    stock       bigint NOT NULL DEFAULT 0 CHECK (stock >= 0),
    -- Kept by the triggers on orders below.
    open_orders bigint NOT NULL DEFAULT 0 CHECK (open_orders >= 0)
);
CREATE INDEX pets_by_status ON pets (status, id);
CREATE INDEX pets_by_category ON pets (category_id, id);

-- No foreign key to pets: a complete order outlives its pet. Triggers keep open orders
-- pointing at a pet that exists.
CREATE TABLE orders (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    pet_id    bigint NOT NULL CHECK (pet_id > 0),
    quantity  bigint NOT NULL CHECK (quantity BETWEEN 1 AND 1000),
    ship_date timestamptz,
    complete  boolean NOT NULL DEFAULT false,
    owner_id  bigint CHECK (owner_id IS NULL OR owner_id > 0)
);
CREATE INDEX orders_by_pet ON orders (pet_id, id);
CREATE INDEX orders_by_owner ON orders (owner_id, id);
CREATE INDEX orders_by_completion ON orders (complete, id);

CREATE FUNCTION orders_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        -- The pet row is locked, so it cannot be deleted before this order commits.
        PERFORM 1 FROM pets WHERE id = NEW.pet_id FOR KEY SHARE;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'unknown_pet' USING ERRCODE = 'P0001';
        END IF;
        IF NOT NEW.complete THEN
            UPDATE pets SET open_orders = open_orders + 1 WHERE id = NEW.pet_id;
        END IF;
        RETURN NEW;
    ELSIF TG_OP = 'UPDATE' THEN
        IF OLD.complete AND (NOT NEW.complete OR NEW.pet_id <> OLD.pet_id
                             OR NEW.quantity <> OLD.quantity) THEN
            RAISE EXCEPTION 'invalid_transition' USING ERRCODE = 'P0001';
        END IF;
        IF NOT OLD.complete AND NEW.complete THEN
            UPDATE pets SET open_orders = open_orders - 1 WHERE id = NEW.pet_id;
        END IF;
        RETURN NEW;
    ELSE
        IF OLD.complete THEN
            RAISE EXCEPTION 'order_not_cancellable' USING ERRCODE = 'P0001';
        END IF;
        UPDATE pets SET open_orders = open_orders - 1 WHERE id = OLD.pet_id;
        RETURN OLD;
    END IF;
END;
$$;

CREATE TRIGGER orders_guard
BEFORE INSERT OR UPDATE OR DELETE ON orders
FOR EACH ROW EXECUTE FUNCTION orders_guard();

CREATE FUNCTION pets_with_open_orders_stay() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.open_orders > 0 THEN
        RAISE EXCEPTION 'pet_has_open_orders' USING ERRCODE = 'P0001';
    END IF;
    RETURN OLD;
END;
$$;

CREATE TRIGGER pets_with_open_orders_stay
BEFORE DELETE ON pets
FOR EACH ROW EXECUTE FUNCTION pets_with_open_orders_stay();

-- The transactional outbox: written in the same transaction as the change it records.
CREATE TABLE events (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    time    timestamptz NOT NULL,
    type    text NOT NULL,
    subject text NOT NULL,
    data    jsonb NOT NULL
);

-- API keys: only a prefix (to find the key) and the SHA-256 hash (to check it). Revoked,
-- never deleted.
CREATE TABLE api_keys (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
    role       text NOT NULL CHECK (role IN ('admin', 'staff', 'customer')),
    prefix     text NOT NULL,
    hash       bytea NOT NULL UNIQUE CHECK (octet_length(hash) = 32),
    created_at timestamptz NOT NULL,
    revoked_at timestamptz
);
CREATE INDEX api_keys_by_prefix ON api_keys (prefix);

CREATE FUNCTION api_keys_are_not_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'keys are revoked, not deleted';
END;
$$;

CREATE TRIGGER api_keys_are_not_deleted
BEFORE DELETE ON api_keys
FOR EACH ROW EXECUTE FUNCTION api_keys_are_not_deleted();

-- What each idempotency key was answered, per owner, written in the create's transaction.
-- The answer is opaque to the store (the HTTP layer's status, headers and body).
CREATE TABLE idempotency_records (
    owner_id        bigint NOT NULL CHECK (owner_id > 0),
    idempotency_key text NOT NULL CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
    fingerprint     bytea NOT NULL CHECK (octet_length(fingerprint) = 32),
    response        bytea NOT NULL,
    recorded_at     timestamptz NOT NULL,
    PRIMARY KEY (owner_id, idempotency_key)
);
CREATE INDEX idempotency_records_by_age ON idempotency_records (recorded_at);

-- Webhook subscriptions, their cursors and retry state, and every attempt.
CREATE TABLE webhooks (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    url               text NOT NULL CHECK (char_length(url) BETWEEN 8 AND 2048),
    event_types       text NOT NULL CHECK (char_length(event_types) > 0),
    secret            text NOT NULL,
    created_at        timestamptz NOT NULL,
    delivered_through bigint NOT NULL CHECK (delivered_through >= 0),
    failed_attempts   bigint NOT NULL DEFAULT 0 CHECK (failed_attempts >= 0),
    next_attempt_at   timestamptz
);

CREATE TABLE webhook_deliveries (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    webhook_id      bigint NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id        bigint NOT NULL,
    event_type      text NOT NULL,
    attempt         bigint NOT NULL CHECK (attempt >= 1),
    attempted_at    timestamptz NOT NULL,
    outcome         text NOT NULL CHECK (outcome IN ('delivered', 'failed')),
    status_code     integer CHECK (status_code BETWEEN 100 AND 999),
    error           text,
    next_attempt_at timestamptz
);
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, id);

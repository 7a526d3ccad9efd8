-- The stock ledger (docs/domain.md, "The stock ledger"), added beside what an older version's
-- nodes use: they go on changing stock without it during a rolling upgrade, so nothing is
-- recorded in it until `migrate --finish` begins it (900001_open_stock_ledger).

-- The units in each pet's open orders, kept by the trigger on orders as open_orders is, so
-- that an older version's node, which knows neither, keeps it right too. An order an older
-- node places while this runs may be missed by the count below: the ledger's beginning counts
-- them all again, once no older node is left.
ALTER TABLE pets ADD COLUMN committed bigint NOT NULL DEFAULT 0 CHECK (committed >= 0);
UPDATE pets SET committed = o.units
FROM (SELECT pet_id, sum(quantity) AS units FROM orders WHERE NOT complete GROUP BY pet_id) o
WHERE pets.id = o.pet_id;

CREATE OR REPLACE FUNCTION orders_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        -- The pet row is locked, so it cannot be deleted before this order commits.
        PERFORM 1 FROM pets WHERE id = NEW.pet_id FOR KEY SHARE;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'unknown_pet' USING ERRCODE = 'P0001';
        END IF;
        IF NOT NEW.complete THEN
            UPDATE pets SET open_orders = open_orders + 1, committed = committed + NEW.quantity
            WHERE id = NEW.pet_id;
        END IF;
        RETURN NEW;
    ELSIF TG_OP = 'UPDATE' THEN
        IF OLD.complete AND (NOT NEW.complete OR NEW.pet_id <> OLD.pet_id
                             OR NEW.quantity <> OLD.quantity) THEN
            RAISE EXCEPTION 'invalid_transition' USING ERRCODE = 'P0001';
        END IF;
        IF NOT OLD.complete AND NEW.complete THEN
            UPDATE pets SET open_orders = open_orders - 1, committed = committed - OLD.quantity
            WHERE id = NEW.pet_id;
        END IF;
        RETURN NEW;
    ELSE
        IF OLD.complete THEN
            RAISE EXCEPTION 'order_not_cancellable' USING ERRCODE = 'P0001';
        END IF;
        UPDATE pets SET open_orders = open_orders - 1, committed = committed - OLD.quantity
        WHERE id = OLD.pet_id;
        RETURN OLD;
    END IF;
END;
$$;

-- One row per movement of a pet's stock. No foreign key to pets: a deleted pet keeps its
-- history (its last movement writes off what it had). Each kind moves the two balances its
-- own way (petstore_core's `MovementKind`); the table refuses a row whose changes do not fit
-- its kind. Ids come from a sequence: a pet's movements are made under its row's lock, so
-- read in id order they are in the order they were made.
CREATE TABLE stock_movements (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    pet_id           bigint NOT NULL CHECK (pet_id > 0),
    kind             text NOT NULL CHECK (kind IN ('opening', 'set', 'adjusted', 'committed',
                                                   'released', 'sold', 'written_off')),
    quantity         bigint NOT NULL CHECK (quantity >= 0),
    available_change bigint NOT NULL,
    committed_change bigint NOT NULL,
    available_after  bigint NOT NULL CHECK (available_after >= 0),
    committed_after  bigint NOT NULL CHECK (committed_after >= 0),
    order_id         bigint CHECK (order_id > 0),
    line_no          bigint CHECK (line_no BETWEEN 1 AND 50),
    reason           text CHECK (char_length(reason) BETWEEN 1 AND 200),
    actor            text,
    request_id       text CHECK (char_length(request_id) BETWEEN 1 AND 128),
    time             timestamptz NOT NULL,
    CHECK ((line_no IS NULL) = (order_id IS NULL)),
    CHECK (CASE kind
        WHEN 'opening' THEN available_change = quantity AND committed_change >= 0
        WHEN 'set' THEN committed_change = 0 AND abs(available_change) = quantity
        WHEN 'adjusted' THEN committed_change = 0 AND abs(available_change) = quantity
        WHEN 'committed' THEN available_change = -quantity AND committed_change = quantity
        WHEN 'released' THEN available_change = quantity AND committed_change = -quantity
        WHEN 'sold' THEN available_change = 0 AND committed_change = -quantity
        WHEN 'written_off' THEN available_change = -quantity AND committed_change = 0
    END)
);
-- Keyset pages of one pet's movements.
CREATE INDEX stock_movements_by_pet ON stock_movements (pet_id, id);

-- One row once the ledger has begun; every movement is inserted only while it is there.
CREATE TABLE ledger_opened (
    id bigint PRIMARY KEY CHECK (id = 1),
    at timestamptz NOT NULL
);

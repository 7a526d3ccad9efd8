-- Holds (docs/domain.md, "Holds"): units of pets set aside for a basket until the hold is
-- released, expires or is checked out. Added beside what an older version's node uses; none
-- is placed before `migrate --finish` has begun them (900002_open_holds), so no node that
-- does not count held units serves by then.

-- The units each pet's active holds set aside, kept by the triggers below.
ALTER TABLE pets ADD COLUMN held bigint NOT NULL DEFAULT 0 CHECK (held >= 0);

-- A hold, active until `ended` says how it ended. Kept once ended: its ending is what tells a
-- shopper coming back from paying why it is gone, and a consumed hold names its one order
-- (UNIQUE: a hold becomes at most one order).
CREATE TABLE holds (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner_id   bigint CHECK (owner_id IS NULL OR owner_id > 0),
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    ended      text CHECK (ended IN ('released', 'expired', 'consumed')),
    ended_at   timestamptz,
    order_id   bigint UNIQUE CHECK (order_id > 0),
    CONSTRAINT holds_end_whole CHECK ((ended IS NULL) = (ended_at IS NULL)),
    CONSTRAINT holds_order_when_consumed
        CHECK ((order_id IS NOT NULL) = (ended IS NOT DISTINCT FROM 'consumed'))
);
-- The sweeper's one statement: the active holds whose expiry has come, soonest first. Only
-- active holds are in it, so an idle shop's sweep reads an empty index.
CREATE INDEX holds_due ON holds (expires_at, id) WHERE ended IS NULL;

CREATE TABLE hold_lines (
    hold_id  bigint NOT NULL REFERENCES holds (id) ON DELETE CASCADE,
    line_no  bigint NOT NULL CHECK (line_no BETWEEN 1 AND 50),
    pet_id   bigint NOT NULL CHECK (pet_id > 0),
    quantity bigint NOT NULL CHECK (quantity BETWEEN 1 AND 1000),
    PRIMARY KEY (hold_id, line_no)
);

-- A line is written with its active hold: its pet must exist, and takes its units in.
CREATE FUNCTION hold_line_placed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE pets SET held = held + NEW.quantity WHERE id = NEW.pet_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown_pet' USING ERRCODE = 'P0001';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER hold_line_placed
BEFORE INSERT ON hold_lines
FOR EACH ROW EXECUTE FUNCTION hold_line_placed();

-- A hold ends once, and never changes after.
CREATE FUNCTION hold_ends_once() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'hold_ended' USING ERRCODE = 'P0001';
END;
$$;

CREATE TRIGGER hold_ends_once
BEFORE UPDATE ON holds
FOR EACH ROW WHEN (OLD.ended IS NOT NULL) EXECUTE FUNCTION hold_ends_once();

-- Its ending gives its pets' units up.
CREATE FUNCTION hold_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE pets SET held = pets.held - l.quantity
    FROM hold_lines l WHERE l.hold_id = NEW.id AND pets.id = l.pet_id;
    RETURN NEW;
END;
$$;

CREATE TRIGGER hold_ended
AFTER UPDATE OF ended ON holds
FOR EACH ROW WHEN (OLD.ended IS NULL AND NEW.ended IS NOT NULL) EXECUTE FUNCTION hold_ended();

-- A pet whose units are held stays, as one with open orders does: an older version's node,
-- which counts only orders, is refused too.
CREATE FUNCTION pet_with_held_units_stays() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.held > 0 THEN
        RAISE EXCEPTION 'pet_has_open_orders' USING ERRCODE = 'P0001';
    END IF;
    RETURN OLD;
END;
$$;

CREATE TRIGGER pet_with_held_units_stays
BEFORE DELETE ON pets
FOR EACH ROW EXECUTE FUNCTION pet_with_held_units_stays();

-- The ledger gains the third balance and the holds' kinds: an older version's node writes
-- neither, and its rows take the defaults (it never moves held units).
ALTER TABLE stock_movements
    ADD COLUMN held_change bigint NOT NULL DEFAULT 0,
    ADD COLUMN held_after bigint NOT NULL DEFAULT 0 CHECK (held_after >= 0),
    ADD COLUMN hold_id bigint CHECK (hold_id > 0),
    DROP CONSTRAINT stock_movements_kind_check,
    DROP CONSTRAINT stock_movements_check1,
    ADD CONSTRAINT stock_movements_kind_check CHECK (kind IN ('opening', 'set', 'adjusted',
        'committed', 'released', 'sold', 'written_off', 'held', 'hold_released',
        'hold_expired', 'hold_committed')),
    ADD CONSTRAINT stock_movements_fit_their_kind CHECK (CASE kind
        WHEN 'opening' THEN available_change = quantity AND held_change = 0
                            AND committed_change >= 0
        WHEN 'set' THEN held_change = 0 AND committed_change = 0
                        AND abs(available_change) = quantity
        WHEN 'adjusted' THEN held_change = 0 AND committed_change = 0
                             AND abs(available_change) = quantity
        WHEN 'committed' THEN available_change = -quantity AND held_change = 0
                              AND committed_change = quantity
        WHEN 'released' THEN available_change = quantity AND held_change = 0
                             AND committed_change = -quantity
        WHEN 'sold' THEN available_change = 0 AND held_change = 0
                         AND committed_change = -quantity
        WHEN 'written_off' THEN available_change = -quantity AND held_change = 0
                                AND committed_change = 0
        WHEN 'held' THEN available_change = -quantity AND held_change = quantity
                         AND committed_change = 0
        WHEN 'hold_released' THEN available_change = quantity AND held_change = -quantity
                                  AND committed_change = 0
        WHEN 'hold_expired' THEN available_change = quantity AND held_change = -quantity
                                 AND committed_change = 0
        WHEN 'hold_committed' THEN available_change = 0 AND held_change = -quantity
                                   AND committed_change = quantity
    END);

-- One row once holds have begun: a hold is placed only while it is there
-- (900002_open_holds writes it, through `migrate --finish`).
CREATE TABLE holds_opened (
    id bigint PRIMARY KEY CHECK (id = 1),
    at timestamptz NOT NULL
);

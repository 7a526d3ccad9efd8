DROP TABLE holds_opened;
DELETE FROM stock_movements WHERE kind IN ('held', 'hold_released', 'hold_expired', 'hold_committed');
ALTER TABLE stock_movements
    DROP CONSTRAINT stock_movements_fit_their_kind,
    DROP CONSTRAINT stock_movements_kind_check,
    DROP COLUMN hold_id,
    DROP COLUMN held_after,
    DROP COLUMN held_change,
    ADD CONSTRAINT stock_movements_kind_check CHECK (kind IN ('opening', 'set', 'adjusted',
        'committed', 'released', 'sold', 'written_off')),
    ADD CONSTRAINT stock_movements_check1 CHECK (CASE kind
        WHEN 'opening' THEN available_change = quantity AND committed_change >= 0
        WHEN 'set' THEN committed_change = 0 AND abs(available_change) = quantity
        WHEN 'adjusted' THEN committed_change = 0 AND abs(available_change) = quantity
        WHEN 'committed' THEN available_change = -quantity AND committed_change = quantity
        WHEN 'released' THEN available_change = quantity AND committed_change = -quantity
        WHEN 'sold' THEN available_change = 0 AND committed_change = -quantity
        WHEN 'written_off' THEN available_change = -quantity AND committed_change = 0
    END);
DROP TRIGGER pet_with_held_units_stays ON pets;
DROP FUNCTION pet_with_held_units_stays();
DROP TABLE hold_lines;
DROP TABLE holds;
DROP FUNCTION hold_ended();
DROP FUNCTION hold_ends_once();
DROP FUNCTION hold_line_placed();
ALTER TABLE pets DROP COLUMN held;

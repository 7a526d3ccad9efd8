use proptest::prelude::*;

use super::*;

/// A pet whose open orders hold one unit each (`holding` says otherwise).
fn pet(status: PetStatus, stock: u32, open_orders: u64) -> PetStock {
    PetStock {
        pet_id: PetId::new(1).unwrap(),
        status,
        stock: Stock::from_level(stock),
        open_orders,
        committed: Stock::from_level(u32::try_from(open_orders).unwrap()),
        held: Stock::ZERO,
    }
}

impl PetStock {
    fn holding(self, units: u32) -> Self {
        Self {
            committed: Stock::from_level(units),
            ..self
        }
    }
}

fn qty(n: i64) -> Quantity {
    Quantity::new(n).unwrap()
}

#[test]
fn an_order_takes_units_out_of_stock_at_once() {
    let t = pet(PetStatus::Available, 5, 0).place_order(qty(2)).unwrap();
    assert_eq!(t.after, pet(PetStatus::Available, 3, 1).holding(2));
    assert_eq!(t.change, Some(StockChange::of(MovementKind::Committed, 2)));
    assert_eq!(
        t.events,
        vec![DomainEvent::InventoryUpdated(t.after.inventory_item())]
    );
}

#[test]
fn taking_the_last_unit_makes_the_pet_pending() {
    let t = pet(PetStatus::Available, 2, 0).place_order(qty(2)).unwrap();
    assert_eq!(t.after, pet(PetStatus::Pending, 0, 1).holding(2));
    assert!(t.events.contains(&DomainEvent::PetStatusChanged {
        pet_id: PetId::new(1).unwrap(),
        from: PetStatus::Available,
        to: PetStatus::Pending,
    }));
}

#[test]
fn only_available_pets_can_be_ordered() {
    for status in [PetStatus::Pending, PetStatus::Sold] {
        let err = pet(status, 10, 0).place_order(qty(1)).unwrap_err();
        assert_eq!(err.code(), "pet_not_available");
    }
}

#[test]
fn a_sold_out_pet_reports_stock_before_status() {
    for status in PetStatus::ALL {
        let err = pet(status, 0, 1).place_order(qty(1)).unwrap_err();
        assert_eq!(err.code(), "insufficient_stock");
    }
}

#[test]
fn an_order_cannot_take_more_than_the_stock() {
    let err = pet(PetStatus::Available, 2, 0)
        .place_order(qty(3))
        .unwrap_err();
    assert_eq!(
        err,
        DomainError::InsufficientStock {
            pet_id: PetId::new(1).unwrap(),
            requested: 3,
            available: 2
        }
    );
}

#[test]
fn completing_the_last_open_order_without_stock_sells_the_pet() {
    let t = pet(PetStatus::Pending, 0, 1).complete_order(qty(1));
    assert_eq!(t.after, pet(PetStatus::Sold, 0, 0));
    assert_eq!(t.change, Some(StockChange::of(MovementKind::Sold, 1)));
}

#[test]
fn completing_while_other_orders_are_open_keeps_the_pet_pending() {
    let t = pet(PetStatus::Pending, 0, 2).complete_order(qty(1));
    assert_eq!(t.after, pet(PetStatus::Pending, 0, 1));
    assert!(t.events.is_empty());
}

#[test]
fn completing_while_stock_remains_changes_no_status() {
    let t = pet(PetStatus::Available, 3, 1).complete_order(qty(1));
    assert_eq!(t.after, pet(PetStatus::Available, 3, 0));
    assert!(t.events.is_empty());
}

#[test]
fn cancelling_puts_units_back_and_frees_a_pending_pet() {
    let t = pet(PetStatus::Pending, 0, 1)
        .holding(4)
        .cancel_order(qty(4));
    assert_eq!(t.after, pet(PetStatus::Available, 4, 0));
    assert_eq!(t.change, Some(StockChange::of(MovementKind::Released, 4)));
    assert_eq!(t.events.len(), 2);
}

#[test]
fn cancelling_leaves_a_status_staff_set_by_hand() {
    let t = pet(PetStatus::Sold, 0, 1).cancel_order(qty(1));
    assert_eq!(t.after, pet(PetStatus::Sold, 1, 0));
}

#[test]
fn stock_makes_pending_and_sold_pets_available() {
    for status in [PetStatus::Pending, PetStatus::Sold, PetStatus::Available] {
        let t = pet(status, 0, 1).set_stock(Stock::from_level(5));
        assert_eq!(t.after, pet(PetStatus::Available, 5, 1));
    }
}

#[test]
fn no_stock_makes_an_available_pet_pending_or_sold() {
    assert_eq!(
        pet(PetStatus::Available, 5, 2).set_stock(Stock::ZERO).after,
        pet(PetStatus::Pending, 0, 2)
    );
    assert_eq!(
        pet(PetStatus::Available, 5, 0).set_stock(Stock::ZERO).after,
        pet(PetStatus::Sold, 0, 0)
    );
    assert_eq!(
        pet(PetStatus::Pending, 5, 1).set_stock(Stock::ZERO).after,
        pet(PetStatus::Pending, 0, 1)
    );
}

#[test]
fn setting_the_same_level_records_nothing() {
    assert!(
        pet(PetStatus::Available, 5, 0)
            .set_stock(Stock::from_level(5))
            .events
            .is_empty()
    );
}

#[test]
fn staff_may_set_any_status_and_it_is_recorded() {
    let t = pet(PetStatus::Available, 5, 0).set_status(PetStatus::Sold);
    assert_eq!(t.after, pet(PetStatus::Sold, 5, 0));
    assert_eq!(t.events.len(), 1);
}

#[test]
fn an_adjustment_moves_stock_by_its_units_as_a_set_would_move_the_status() {
    let units = |n| AdjustmentUnits::new(n).unwrap();
    let t = pet(PetStatus::Available, 2, 1).adjust(units(-2)).unwrap();
    assert_eq!(t.after, pet(PetStatus::Pending, 0, 1));
    assert_eq!(
        t.change,
        Some(StockChange::between(
            MovementKind::Adjusted,
            Stock::from_level(2),
            Stock::ZERO
        ))
    );
    let t = pet(PetStatus::Sold, 0, 0).adjust(units(3)).unwrap();
    assert_eq!(t.after, pet(PetStatus::Available, 3, 0));
    assert_eq!(
        pet(PetStatus::Available, 2, 0)
            .adjust(units(-3))
            .unwrap_err(),
        DomainError::InsufficientStock {
            pet_id: PetId::new(1).unwrap(),
            requested: 3,
            available: 2
        }
    );
    let err = pet(PetStatus::Available, 999_999, 0)
        .adjust(units(2))
        .unwrap_err();
    assert_eq!(err.code(), "validation_failed");
}

#[test]
fn deleting_a_pet_writes_off_its_units_and_nothing_when_it_has_none() {
    let t = pet(PetStatus::Available, 4, 0).write_off();
    assert_eq!(t.after.stock, Stock::ZERO);
    assert_eq!(t.change, Some(StockChange::of(MovementKind::WrittenOff, 4)));
    assert_eq!(pet(PetStatus::Sold, 0, 0).write_off().change, None);
}

#[test]
fn a_change_of_nothing_is_no_movement() {
    let unchanged = pet(PetStatus::Available, 5, 0).set_stock(Stock::from_level(5));
    assert_eq!(unchanged.change, None);
    assert_eq!(
        pet(PetStatus::Available, 5, 0)
            .set_status(PetStatus::Sold)
            .change,
        None
    );
}

#[test]
fn held_units_leave_stock_and_count_as_an_open_order_for_the_status() {
    let held = pet(PetStatus::Available, 2, 0).hold(qty(2)).unwrap();
    assert_eq!((held.after.stock.get(), held.after.held.get()), (0, 2));
    assert_eq!(
        held.after.status,
        PetStatus::Pending,
        "the last units are held"
    );
    assert_eq!(held.change, Some(StockChange::of(MovementKind::Held, 2)));
    assert!(pet(PetStatus::Available, 1, 0).hold(qty(2)).is_err());
    assert!(pet(PetStatus::Sold, 5, 0).hold(qty(1)).is_err());
    // No stock but units held: pending, never sold, whatever else happens.
    let emptied = PetStock {
        held: Stock::from_level(1),
        ..pet(PetStatus::Available, 3, 0)
    }
    .set_stock(Stock::ZERO);
    assert_eq!(emptied.after.status, PetStatus::Pending);
    let completed = PetStock {
        held: Stock::from_level(1),
        ..pet(PetStatus::Pending, 0, 1)
    }
    .complete_order(qty(1));
    assert_eq!(completed.after.status, PetStatus::Pending);
}

#[test]
fn a_hold_ends_by_giving_its_units_back_or_into_an_order() {
    let held = pet(PetStatus::Available, 2, 0).hold(qty(2)).unwrap().after;
    let expired = held.end_hold(qty(2), MovementKind::HoldExpired);
    assert_eq!(
        expired.after,
        pet(PetStatus::Available, 2, 0),
        "all back, available again"
    );
    assert_eq!(
        expired.change,
        Some(StockChange::of(MovementKind::HoldExpired, 2))
    );
    let ordered = held.commit_hold(qty(2));
    assert_eq!(ordered.after.stock, Stock::ZERO);
    assert_eq!(
        (ordered.after.held.get(), ordered.after.committed.get()),
        (0, 2)
    );
    assert_eq!(
        (ordered.after.open_orders, ordered.after.status),
        (1, PetStatus::Pending)
    );
    assert_eq!(
        ordered.change,
        Some(StockChange::of(MovementKind::HoldCommitted, 2))
    );
    let updates = ordered
        .events
        .iter()
        .filter(|e| matches!(e, DomainEvent::InventoryUpdated(_)));
    assert_eq!(
        updates.count(),
        1,
        "held units changed, so the inventory did"
    );
}

fn any_status() -> impl Strategy<Value = PetStatus> {
    prop::sample::select(PetStatus::ALL.to_vec())
}

proptest! {
    #[test]
    fn every_movement_fits_its_kind_and_moves_the_balances_by_its_changes(
        status in any_status(), stock in 0u32..10, open in 1u64..4, extra in 0u32..4,
        rule in 0u8..9, n in 1i64..8, level in 0u32..10, held in 0u32..4,
    ) {
        let before = PetStock {
            held: Stock::from_level(held),
            ..pet(status, stock, open).holding(u32::try_from(open).unwrap() + extra)
        };
        let t = match rule {
            0 => before.place_order(qty(n)).ok(),
            1 => Some(before.complete_order(qty(1))),
            2 => Some(before.cancel_order(qty(1))),
            3 => Some(before.set_stock(Stock::from_level(level))),
            4 => AdjustmentUnits::new(n - 4).ok().and_then(|units| before.adjust(units).ok()),
            5 => Some(before.write_off()),
            6 => before.hold(qty(n)).ok(),
            7 if held > 0 => Some(before.end_hold(qty(1), MovementKind::HoldExpired)),
            _ if held > 0 => Some(before.commit_hold(qty(1))),
            _ => None,
        };
        if let Some(t) = t {
            let moved_available = i64::from(t.after.stock.get()) - i64::from(before.stock.get());
            let moved_committed =
                i64::from(t.after.committed.get()) - i64::from(before.committed.get());
            let moved_held = i64::from(t.after.held.get()) - i64::from(before.held.get());
            match t.change {
                Some(change) => {
                    prop_assert!(change.fits());
                    prop_assert_eq!(change.available, moved_available);
                    prop_assert_eq!(change.held, moved_held);
                    prop_assert_eq!(change.committed, moved_committed);
                }
                None => prop_assert_eq!((moved_available, moved_held, moved_committed), (0, 0, 0)),
            }
        }
    }

    #[test]
    fn placing_then_cancelling_restores_stock_and_availability(
        stock in 1u32..=2000, q in 1i64..=1000, open in 0u64..5
    ) {
        let before = pet(PetStatus::Available, stock, open);
        if let Ok(placed) = before.place_order(qty(q)) {
            prop_assert_eq!(placed.after.stock.get() + q as u32, stock);
            let back = placed.after.cancel_order(qty(q)).after;
            prop_assert_eq!(back, before);
        } else {
            prop_assert!(i64::from(stock) < q);
        }
    }

    #[test]
    fn events_describe_exactly_what_changed(
        status in any_status(), stock in 0u32..10, open in 0u64..3, level in 0u32..10
    ) {
        let before = pet(status, stock, open);
        let t = before.set_stock(Stock::from_level(level));
        let status_events = t.events.iter().filter(|e| matches!(e, DomainEvent::PetStatusChanged { .. })).count();
        let stock_events = t.events.iter().filter(|e| matches!(e, DomainEvent::InventoryUpdated(_))).count();
        prop_assert_eq!(status_events, usize::from(t.after.status != before.status));
        prop_assert_eq!(stock_events, usize::from(t.after.stock != before.stock));
    }

    #[test]
    fn no_rule_touches_stock_except_orders_and_stock_updates(
        status in any_status(), stock in 0u32..10, open in 1u64..3, to in any_status()
    ) {
        let before = pet(status, stock, open);
        prop_assert_eq!(before.complete_order(qty(1)).after.stock, before.stock);
        prop_assert_eq!(before.set_status(to).after.stock, before.stock);
    }
}

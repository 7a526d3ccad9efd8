//! The stock ledger: every change of stock is a movement, with what it belongs to and who
//! made it; a refused change makes none; an adjustment is guarded by the level it expects.

use super::*;
use crate::{
    Actor, Adjustment, AdjustmentUnits, Cause, Movement, MovementKind, MovementQuery, OrderPatch,
    Reason, RequestId,
};

fn movements<S: Store>(f: &Fixture<S>, pet: PetId) -> Vec<Movement> {
    let query = MovementQuery {
        pet_id: pet,
        after: None,
        limit: PageSize::MAX_PAGE,
    };
    f.shop
        .inventory()
        .movements(OPERATOR, &query)
        .must("list movements")
        .items
}

fn kinds(movements: &[Movement]) -> Vec<(MovementKind, i64, i64, u32, u32)> {
    movements
        .iter()
        .map(|m| {
            (
                m.kind,
                m.available_change,
                m.committed_change,
                m.available_after.get(),
                m.committed_after.get(),
            )
        })
        .collect()
}

fn adjustment(units: i64, reason: &str, expected: Option<u32>) -> Adjustment {
    Adjustment {
        change: AdjustmentUnits::new(units).must("units"),
        reason: Reason::parse(reason).must("a reason"),
        change_from_quantity: expected.map(Stock::from_level),
    }
}

/// A set, an order, its completion, another order and its cancellation, an adjustment and the
/// pet's deletion are each one movement of the pet's ledger, in order, with the balances after
/// it, the order line it belongs to, the reason, and who made it under which request.
pub fn every_change_of_stock_is_a_movement_of_its_kind<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 5);
    let first = f.order(rex.id, 2).must("order two");
    let complete = OrderPatch {
        complete: Some(true),
        ..OrderPatch::default()
    };
    f.shop
        .orders()
        .update(OPERATOR, first.id, complete, Always)
        .must("complete it");
    let second = f.order(rex.id, 1).must("order one");
    f.shop
        .orders()
        .cancel(OPERATOR, second.id, Always)
        .must("cancel it");
    let desk = Actor::chore("counting");
    let counted = f.shop.over(f.shop.store()).with_cause(Cause {
        actor: Some(desk.clone()),
        trace: None,
        request_id: RequestId::parse("count-1"),
    });
    counted
        .inventory()
        .adjust(
            OPERATOR,
            rex.id,
            adjustment(-1, "one found lame", Some(3)),
            Always,
        )
        .must("adjust");
    f.shop
        .pets()
        .delete(OPERATOR, rex.id, Always)
        .must("delete");

    let moved = movements(&f, rex.id);
    use MovementKind::*;
    assert_eq!(
        kinds(&moved),
        [
            (Set, 5, 0, 5, 0),
            (Committed, -2, 2, 3, 2),
            (Sold, 0, -2, 3, 0),
            (Committed, -1, 1, 2, 1),
            (Released, 1, -1, 3, 0),
            (Adjusted, -1, 0, 2, 0),
            (WrittenOff, -2, 0, 0, 0),
        ]
    );
    assert!(moved.windows(2).all(|w| w[0].id < w[1].id));
    assert!(moved.iter().all(Movement::fits_its_kind));
    assert_eq!(moved[1].order_id, Some(first.id));
    assert_eq!(moved[1].line_no, Some(1));
    assert_eq!(
        moved[4].order_id,
        Some(second.id),
        "a release names its order"
    );
    assert_eq!(moved[0].actor, Some(Actor::Operator));
    let adjusted = &moved[5];
    assert_eq!(
        adjusted.reason.as_ref().map(Reason::as_str),
        Some("one found lame")
    );
    assert_eq!(adjusted.actor, Some(desk));
    assert_eq!(
        adjusted.request_id.as_ref().map(RequestId::as_str),
        Some("count-1")
    );
    assert_eq!(adjusted.time, f.clock.now());
}

/// A change refused by a rule or a condition writes no movement, and a change of nothing
/// (the same level again, a status set by hand) writes none either.
pub fn a_refused_or_empty_change_makes_no_movement<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 2);
    let before = movements(&f, rex.id);
    assert_eq!(code(f.order(rex.id, 3)), "insufficient_stock");
    let inventory = f.shop.inventory();
    assert_eq!(
        code(inventory.adjust(OPERATOR, rex.id, adjustment(-3, "too many", None), Always)),
        "insufficient_stock"
    );
    assert_eq!(
        code(inventory.adjust(OPERATOR, rex.id, adjustment(1, "late", Some(7)), Always)),
        "precondition_failed",
        "an adjustment meant for another level"
    );
    let stale = |_: &crate::InventoryItem| false;
    assert_eq!(
        code(inventory.adjust(OPERATOR, rex.id, adjustment(1, "stale", None), stale)),
        "precondition_failed"
    );
    assert_eq!(
        code(inventory.adjust(customer(3), rex.id, adjustment(1, "mine", None), Always)),
        "forbidden"
    );
    inventory
        .set_stock(OPERATOR, rex.id, Stock::from_level(2), Always)
        .must("the same level");
    assert_eq!(movements(&f, rex.id), before);
    assert_eq!(
        code(inventory.movements(
            customer(3),
            &MovementQuery {
                pet_id: rex.id,
                after: None,
                limit: PageSize::default(),
            }
        )),
        "forbidden",
        "only staff read the ledger"
    );
}

/// A delivery receives every line's units as adjustments with its reason, or, when any line
/// is refused, none: each refused line named, no stock and no movement changed.
pub fn a_delivery_is_received_whole_or_not_at_all<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 1);
    let fido = f.pet_with_stock("Fido", 0);
    let polly = f.pet_with_stock("Polly", 4);
    let inventory = f.shop.inventory();
    let reason = Reason::parse("Delivery 42").must("a reason");
    let receipt = |pet: PetId, units: i64, fresh: bool| crate::Receipt {
        pet_id: pet,
        units: AdjustmentUnits::new(units).must("units"),
        condition: move |_: &crate::InventoryItem| fresh,
    };
    let before: Vec<_> = [rex.id, fido.id, polly.id]
        .iter()
        .map(|pet| movements(&f, *pet))
        .collect();

    // A stale line and a line of a pet that is gone: both named, nothing received.
    let gone = PetId::new(999).must("id");
    let refused = inventory.receive(
        OPERATOR,
        &reason,
        &[
            receipt(polly.id, 2, true),
            receipt(fido.id, 3, false),
            receipt(gone, 1, true),
        ],
    );
    match refused {
        Err(DomainError::DeliveryRefused { lines }) => {
            let named: Vec<_> = lines.iter().map(|l| (l.line_no, l.error.code())).collect();
            assert_eq!(named, vec![(2, "precondition_failed"), (3, "not_found")]);
        }
        other => panic!("a delivery with a stale line: {other:?}"),
    }
    assert_eq!(
        code(inventory.receive(OPERATOR, &reason, &[receipt(rex.id, 1, false)])),
        "precondition_failed"
    );
    let repeated = inventory.receive(
        OPERATOR,
        &reason,
        &[receipt(rex.id, 1, true), receipt(rex.id, 2, true)],
    );
    assert_eq!(code(repeated), "pet_repeated");
    assert_eq!(
        code(inventory.receive(OPERATOR, &reason, &[receipt(rex.id, -1, true)])),
        "validation_failed"
    );
    let none: [crate::Receipt<crate::Always>; 0] = [];
    assert_eq!(
        code(inventory.receive(OPERATOR, &reason, &none)),
        "validation_failed"
    );
    assert_eq!(
        code(inventory.receive(customer(3), &reason, &[receipt(rex.id, 1, true)])),
        "forbidden"
    );
    let after: Vec<_> = [rex.id, fido.id, polly.id]
        .iter()
        .map(|pet| movements(&f, *pet))
        .collect();
    assert_eq!(after, before, "a refused delivery moves nothing");
    assert_eq!(f.state_of(fido.id), (PetStatus::Available, 0));

    // Whole: each line an adjustment with the reason, the entries after it in line order.
    let received = inventory
        .receive(
            OPERATOR,
            &reason,
            &[receipt(polly.id, 2, true), receipt(fido.id, 3, true)],
        )
        .must("receive the delivery");
    let levels: Vec<_> = received
        .iter()
        .map(|item| (item.pet_id, item.quantity.get()))
        .collect();
    assert_eq!(levels, vec![(polly.id, 6), (fido.id, 3)]);
    for (pet, units, left) in [(polly.id, 2, 6), (fido.id, 3, 3)] {
        let last = movements(&f, pet).pop().must("a movement");
        assert_eq!(last.kind, MovementKind::Adjusted);
        assert_eq!(
            (last.available_change, last.available_after.get()),
            (units, left)
        );
        assert_eq!(
            last.reason.as_ref().map(Reason::as_str),
            Some("Delivery 42")
        );
    }
    assert_eq!(f.state_of(rex.id), (PetStatus::Available, 1), "untouched");
}

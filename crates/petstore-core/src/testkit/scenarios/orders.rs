//! Orders: who sees them, and how they change after they are placed.

use super::{Fixture, OPERATOR, code, customer, staff, start_time};
use crate::testkit::Must;
use crate::{Always, EventType, OrderPatch, OrderQuery, OwnerId, PetId, PetStatus, Store};

/// An order must name an existing pet.
pub fn an_order_for_an_unknown_pet_is_refused<S: Store>(store: S) {
    let f = Fixture::new(store);
    assert_eq!(code(f.order(PetId::new(77).must("id"), 1)), "unknown_pet");
}

/// A complete order stays complete: it cannot be reopened or cancelled; completing it again
/// changes nothing.
pub fn completion_is_final<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 5);
    let order = f.order(rex.id, 1).must("order");
    f.complete(order.id);
    let events = f.event_count();
    let reopen = OrderPatch {
        complete: Some(false),
        ..OrderPatch::default()
    };
    let orders = f.shop.orders();
    assert_eq!(
        code(orders.update(OPERATOR, order.id, reopen, Always)),
        "invalid_transition"
    );
    assert_eq!(
        code(orders.cancel(OPERATOR, order.id, Always)),
        "order_not_cancellable"
    );
    assert!(
        f.complete(order.id).complete,
        "completing again is harmless"
    );
    assert_eq!(
        f.event_count(),
        events,
        "refusals and no-ops record nothing"
    );
    assert!(orders.get(OPERATOR, order.id).must("read").complete);
    assert_eq!(f.state_of(rex.id), (PetStatus::Available, 4));
}

/// A customer sees, lists and cancels only its own orders; another's order does not exist
/// for it. Staff see all.
pub fn customers_see_only_their_own_orders<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 10);
    let (alice, bob) = (customer(1), customer(2));
    let alices = f.order_as(alice, rex.id, 1).must("alice orders");
    let bobs = f.order_as(bob, rex.id, 1).must("bob orders");
    assert_eq!(alices.owner, Some(OwnerId::new(1).must("id")));
    assert_eq!(bobs.owner, Some(OwnerId::new(2).must("id")));

    let orders = f.shop.orders();
    assert_eq!(
        orders.get(alice, alices.id).must("alice reads hers"),
        alices
    );
    assert_eq!(code(orders.get(alice, bobs.id)), "not_found");
    assert_eq!(code(orders.cancel(alice, bobs.id, Always)), "not_found");
    let listed = orders
        .list(alice, &OrderQuery::default())
        .must("alice lists");
    assert_eq!(listed.items, vec![alices.clone()]);
    // A caller cannot widen its scope through the query.
    let sneaky = OrderQuery {
        owner: bobs.owner,
        ..OrderQuery::default()
    };
    assert_eq!(
        orders.list(alice, &sneaky).must("alice lists").items,
        vec![alices.clone()]
    );

    for everyone in [staff(3), OPERATOR] {
        let all = orders
            .list(everyone, &OrderQuery::default())
            .must("staff list");
        assert_eq!(all.items.len(), 2, "{everyone:?} sees every order");
    }
    orders.cancel(bob, bobs.id, Always).must("bob cancels his");
    assert_eq!(f.state_of(rex.id), (PetStatus::Available, 9));
}

/// Ship dates can be set and cleared on an order, and the change is recorded.
pub fn ship_dates_can_be_set_and_cleared<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 5);
    let order = f.order(rex.id, 1).must("order");
    let when = start_time() + chrono::Duration::days(3);
    let before = f.event_count();
    let orders = f.shop.orders();
    let ship_on = |date| {
        let patch = OrderPatch {
            ship_date: Some(date),
            complete: None,
        };
        orders.update(OPERATOR, order.id, patch, Always)
    };
    let dated = ship_on(Some(when)).must("set the ship date");
    assert_eq!(dated.ship_date, Some(when));
    assert_eq!(orders.get(OPERATOR, order.id).must("read"), dated);
    assert_eq!(f.event_types_after(before), vec![EventType::OrderUpdated]);
    let cleared = ship_on(None).must("clear the ship date");
    assert_eq!(cleared.ship_date, None);
    assert!(!cleared.complete);
    assert_eq!(
        f.state_of(rex.id),
        (PetStatus::Available, 4),
        "stock is untouched"
    );
}

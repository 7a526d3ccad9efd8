//! Orders: who sees them, and how they change after they are placed.

use super::{Fixture, OPERATOR, code, customer, staff, start_time};
use crate::testkit::Must;
use crate::{
    Always, EventType, OrderId, OrderPatch, OrderQuery, OwnerId, PageSize, PetId, PetStatus, Store,
};

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

/// Orders list newest first as well as oldest first, both ways from any order, and a list
/// says how many orders its filters find, in all and after a position, in the caller's
/// scope.
pub fn orders_list_newest_first_and_are_counted<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 20);
    let fido = f.pet_with_stock("Fido", 20);
    let alice = customer(1);
    let mut placed = Vec::new();
    for n in 0..7 {
        let pet = if n % 2 == 0 { rex.id } else { fido.id };
        let caller = if n == 3 { alice } else { OPERATOR };
        placed.push(f.order_as(caller, pet, 1).must("order").id);
    }
    f.complete(placed[1]);
    let orders = f.shop.orders();
    let ids = |query: &OrderQuery| -> Vec<OrderId> {
        let page = orders.list(OPERATOR, query).must("list");
        page.items.iter().map(|order| order.id).collect()
    };
    let two = PageSize::new(2).must("size");

    let newest = OrderQuery {
        newest_first: true,
        limit: two,
        ..OrderQuery::default()
    };
    let first = orders.list(OPERATOR, &newest).must("newest page");
    assert_eq!(
        first.items.iter().map(|o| o.id).collect::<Vec<_>>(),
        vec![placed[6], placed[5]]
    );
    let after = OrderId::new(first.next_after.must("a next page")).must("id");
    let second = OrderQuery {
        after: Some(after),
        ..newest
    };
    assert_eq!(ids(&second), vec![placed[4], placed[3]]);
    // Back from the second page's first order: the page before it, nearest first.
    assert_eq!(
        ids(&second.backwards_from(placed[4])),
        vec![placed[5], placed[6]]
    );
    let oldest = OrderQuery {
        limit: two,
        ..OrderQuery::default()
    };
    assert_eq!(ids(&oldest), vec![placed[0], placed[1]]);

    // Counted with the same filters, the page size aside.
    let count = |caller, query: &OrderQuery| orders.count(caller, query).must("count");
    assert_eq!(count(OPERATOR, &newest), 7);
    assert_eq!(count(OPERATOR, &second), 5, "after the second newest");
    assert_eq!(count(OPERATOR, &oldest.backwards_from(placed[2])), 2);
    let rexs_open = OrderQuery {
        pet_id: Some(rex.id),
        complete: Some(false),
        newest_first: true,
        ..OrderQuery::default()
    };
    assert_eq!(count(OPERATOR, &rexs_open), 4);
    assert_eq!(
        ids(&rexs_open),
        vec![placed[6], placed[4], placed[2], placed[0]]
    );
    let fidos_complete = OrderQuery {
        pet_id: Some(fido.id),
        complete: Some(true),
        ..OrderQuery::default()
    };
    assert_eq!(count(OPERATOR, &fidos_complete), 1);
    // A customer counts only their own.
    assert_eq!(count(alice, &OrderQuery::default()), 1);
    assert_eq!(count(alice, &newest), 1);
}

//! The event feed: what each change records.

use std::sync::Arc;

use super::{Fixture, OPERATOR, start_time};
use crate::testkit::Must;
use crate::{
    Actor, Always, Cause, Door, EventType, KeyId, Name, NewOrder, Outcome, PageSize, Quantity,
    Role, Service, Store, TraceParent,
};

/// Each change records exactly its events, with increasing ids and the clock's time.
pub fn every_change_records_its_events_in_order<S: Store>(store: S) {
    use EventType::*;
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 1);
    assert_eq!(
        f.event_types_after(0),
        vec![CategoryCreated, PetCreated, InventoryUpdated]
    );
    let before = f.event_count();
    let order = f.order(rex.id, 1).must("order the last unit");
    assert_eq!(
        f.event_types_after(before),
        vec![OrderPlaced, PetStatusChanged, InventoryUpdated]
    );
    let before = f.event_count();
    f.complete(order.id);
    assert_eq!(
        f.event_types_after(before),
        vec![OrderCompleted, PetStatusChanged]
    );
    let before = f.event_count();
    f.shop
        .pets()
        .delete(OPERATOR, rex.id, Always)
        .must("delete");
    f.shop
        .categories()
        .delete(OPERATOR, f.dogs, Always)
        .must("delete category");
    assert_eq!(
        f.event_types_after(before),
        vec![PetDeleted, CategoryDeleted]
    );

    let feed = f.shop.events();
    let events = feed
        .after(OPERATOR, None, PageSize::new(100).must("size"))
        .must("read events");
    assert!(events.windows(2).all(|w| w[0].id < w[1].id), "ids increase");
    assert_eq!(
        feed.last_id(OPERATOR).must("the latest id"),
        events.last().map(|e| e.id)
    );
    assert!(
        events.iter().all(|e| e.time == start_time()),
        "times come from the clock"
    );
    let placed = events
        .iter()
        .find(|e| e.event_type == OrderPlaced)
        .must("an order.placed event");
    assert_eq!(placed.subject, format!("store/orders/{}", order.id));
    assert_eq!(placed.data["petId"], serde_json::json!(rex.id.get()));
    let after_third = feed
        .after(OPERATOR, Some(events[2].id), PageSize::new(2).must("size"))
        .must("read a page of events");
    assert_eq!(after_third, events[3..5].to_vec());
}

/// A change made for a traced request keeps that trace with each of its events, for the
/// deliveries they cause; other changes keep none.
pub fn events_keep_the_trace_of_the_request_that_caused_them<S: Store>(store: S) {
    let f = Fixture::new(store);
    let cause =
        TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").must("valid");
    let traced =
        Service::with_clock(f.shop.store(), Arc::clone(&f.clock)).caused_by(Some(cause.clone()));
    let untraced_before = f.event_count();
    let rex = f.pet_with_stock("Rex", 2);
    let traced_before = f.event_count();
    let placed = traced
        .orders()
        .place(OPERATOR, NewOrder::new(rex.id, Quantity::ONE), None)
        .must("order");
    assert!(matches!(placed, Outcome::Done(_)));
    let events = f
        .shop
        .events()
        .after(OPERATOR, None, PageSize::new(100).must("size"))
        .must("read events");
    let before = &events[untraced_before..traced_before];
    let after = &events[traced_before..];
    assert!(!before.is_empty() && !after.is_empty());
    assert!(before.iter().all(|e| e.traceparent.is_none()), "{before:?}");
    assert!(
        after.iter().all(|e| e.traceparent.as_ref() == Some(&cause)),
        "{after:?}"
    );
}

/// A change made for a known actor records it with each of its events, and reads it back as
/// it was written: a key's holder (id, name, role, door), the operator or a chore. Use cases
/// never told who acts record the operator, the program that made them; a change whose cause
/// names no actor records none (unknown, as events older than actors read).
pub fn events_record_who_caused_them<S: Store>(store: S) {
    let f = Fixture::new(store);
    let desk = Actor::Key {
        id: KeyId::new(7).must("id"),
        name: Name::parse("desk").must("name"),
        role: Role::Staff,
        door: Door::Console,
    };
    let shop = || Service::with_clock(f.shop.store(), Arc::clone(&f.clock));
    let untold_before = f.event_count();
    let rex = f.pet_with_stock("Rex", 4);
    let mut marks = vec![(untold_before, Some(Actor::Operator))];
    marks.push((f.event_count(), None));
    shop()
        .with_cause(Cause::default())
        .orders()
        .place(OPERATOR, NewOrder::new(rex.id, Quantity::ONE), None)
        .must("order");
    for actor in [desk, Actor::Operator, Actor::chore("webhooks")] {
        marks.push((f.event_count(), Some(actor.clone())));
        shop()
            .acting_as(actor)
            .orders()
            .place(OPERATOR, NewOrder::new(rex.id, Quantity::ONE), None)
            .must("order");
    }
    let events = f
        .shop
        .events()
        .after(OPERATOR, None, PageSize::new(100).must("size"))
        .must("read events");
    marks.push((events.len(), None));
    for pair in marks.windows(2) {
        let ((from, actor), (to, _)) = (&pair[0], &pair[1]);
        let recorded = &events[*from..*to];
        assert!(!recorded.is_empty(), "{events:?}");
        assert!(
            recorded.iter().all(|event| event.actor == *actor),
            "{actor:?}: {recorded:?}"
        );
    }
}

//! The stock rules: what orders, completions, cancellations and stock updates do to a pet's
//! stock and status.

use std::sync::Barrier;

use super::{Fixture, OPERATOR, code, name};
use crate::testkit::Made;
use crate::testkit::Must;
use crate::{
    Always, DomainError, EventType, InventoryQuery, NewCategory, NewPet, Order, OrderQuery,
    PageSize, PetQuery, PetStatus, Stock, Store,
};

/// An order takes its units out of stock when placed; taking the last unit makes the pet
/// `pending`.
pub fn an_order_takes_its_units_at_once_and_the_last_unit_makes_the_pet_pending<S: Store>(
    store: S,
) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 3);
    let first = f.order(rex.id, 2).must("order 2 of 3");
    assert_eq!(
        (first.pet_id, first.quantity.get(), first.complete),
        (rex.id, 2, false)
    );
    assert_eq!(f.state_of(rex.id), (PetStatus::Available, 1));
    f.order(rex.id, 1).must("order the last unit");
    assert_eq!(f.state_of(rex.id), (PetStatus::Pending, 0));
}

/// Only an `available` pet can be ordered, even with stock.
pub fn an_order_needs_an_available_pet<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 5);
    for status in [PetStatus::Pending, PetStatus::Sold] {
        f.shop
            .pets()
            .replace(
                OPERATOR,
                rex.id,
                NewPet::new(name("Rex"), f.dogs).with_status(status),
                Always,
            )
            .must("staff take the pet off sale");
        assert_eq!(code(f.order(rex.id, 1)), "pet_not_available");
        assert_eq!(f.state_of(rex.id), (status, 5));
    }
}

/// An order cannot take more than the stock, and a refused order leaves no trace.
pub fn an_order_needs_enough_stock_and_a_refusal_changes_nothing<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 2);
    let events = f.event_count();
    assert_eq!(
        f.order(rex.id, 3).err(),
        Some(DomainError::InsufficientStock {
            pet_id: rex.id,
            requested: 3,
            available: 2
        })
    );
    assert_eq!(f.state_of(rex.id), (PetStatus::Available, 2));
    let orders = f
        .shop
        .orders()
        .list(OPERATOR, &OrderQuery::default())
        .must("list orders");
    assert!(orders.items.is_empty(), "a refused order is not stored");
    assert_eq!(f.event_count(), events, "a refused order records no event");
}

/// Completing the last open order of a pet with no stock sells it; with other orders open it
/// stays `pending`.
pub fn completing_the_last_open_order_without_stock_sells_the_pet<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 2);
    let a = f.order(rex.id, 1).must("order a");
    let b = f.order(rex.id, 1).must("order b");
    assert!(f.complete(a.id).complete);
    assert_eq!(
        f.state_of(rex.id),
        (PetStatus::Pending, 0),
        "b is still open"
    );
    f.complete(b.id);
    assert_eq!(f.state_of(rex.id), (PetStatus::Sold, 0));
}

/// Cancelling an open order removes it, puts its units back and makes a `pending` pet
/// `available` again.
pub fn cancelling_puts_units_back_and_makes_the_pet_available<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 2);
    let order = f.order(rex.id, 2).must("order all");
    assert_eq!(f.state_of(rex.id), (PetStatus::Pending, 0));
    let orders = f.shop.orders();
    orders.cancel(OPERATOR, order.id, Always).must("cancel");
    assert_eq!(f.state_of(rex.id), (PetStatus::Available, 2));
    assert_eq!(code(orders.get(OPERATOR, order.id)), "not_found");
    assert_eq!(code(orders.cancel(OPERATOR, order.id, Always)), "not_found");
}

/// Stock makes a `pending` or `sold` pet `available`; no stock makes an `available` pet
/// `pending` while orders are open and `sold` otherwise.
pub fn stock_updates_drive_the_status<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 3);
    let order = f.order(rex.id, 1).must("order");
    let set_stock = |level| {
        f.shop
            .inventory()
            .set_stock(OPERATOR, rex.id, Stock::from_level(level), Always)
    };
    set_stock(0).must("empty the stock");
    assert_eq!(
        f.state_of(rex.id),
        (PetStatus::Pending, 0),
        "an order is open"
    );
    set_stock(4).must("restock");
    assert_eq!(f.state_of(rex.id), (PetStatus::Available, 4));
    f.shop
        .orders()
        .cancel(OPERATOR, order.id, Always)
        .must("cancel");
    let item = set_stock(0).must("empty again");
    assert_eq!(
        (item.status, item.quantity),
        (PetStatus::Sold, Stock::ZERO),
        "no order is open"
    );
    set_stock(1).must("restock a sold pet");
    assert_eq!(f.state_of(rex.id), (PetStatus::Available, 1));
}

/// Staff may set any status through a replace; the change is recorded as a status change.
pub fn staff_may_set_any_status_and_it_is_recorded<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 3);
    let before = f.event_count();
    let mark_sold = || {
        f.shop.pets().replace(
            OPERATOR,
            rex.id,
            NewPet::new(name("Rex"), f.dogs).with_status(PetStatus::Sold),
            Always,
        )
    };
    let sold = mark_sold().must("staff mark the pet sold");
    assert_eq!(sold.status, PetStatus::Sold);
    assert_eq!(
        f.state_of(rex.id),
        (PetStatus::Sold, 3),
        "stock is untouched"
    );
    assert_eq!(
        f.event_types_after(before),
        vec![EventType::PetUpdated, EventType::PetStatusChanged]
    );
    let unchanged = f.event_count();
    mark_sold().must("replace with the same state");
    assert_eq!(
        f.event_count(),
        unchanged,
        "a replace that changes nothing records nothing"
    );
}

/// 32 threads each order one unit of a pet with 10 in stock, all at once: exactly 10
/// orders exist afterwards, stock is 0, and every loser was told `insufficient_stock`.
pub fn racing_orders_never_oversell<S: Store + Sync>(store: S) {
    const RACERS: usize = 32;
    const UNITS: u32 = 10;
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", UNITS);
    let start = Barrier::new(RACERS);
    let outcomes: Vec<Result<Order, DomainError>> = std::thread::scope(|scope| {
        let racers: Vec<_> = (0..RACERS)
            .map(|_| {
                scope.spawn(|| {
                    start.wait();
                    f.order(rex.id, 1)
                })
            })
            .collect();
        racers
            .into_iter()
            .map(|racer| racer.join().unwrap_or_else(|_| panic!("a racer panicked")))
            .collect()
    });
    let won = outcomes.iter().filter(|o| o.is_ok()).count();
    assert_eq!(won, UNITS as usize, "exactly the units in stock are sold");
    for outcome in &outcomes {
        if let Err(error) = outcome {
            assert_eq!(
                error.code(),
                "insufficient_stock",
                "a loser was told {error:?}"
            );
        }
    }
    assert_eq!(f.state_of(rex.id), (PetStatus::Pending, 0));
    let orders = f
        .shop
        .orders()
        .list(
            OPERATOR,
            &OrderQuery {
                limit: PageSize::new(100).must("size"),
                ..OrderQuery::default()
            },
        )
        .must("list orders");
    assert_eq!(orders.items.len(), UNITS as usize);
}

/// The stock list filters as the pets list does (category, name, and the units that can be
/// ordered, at most), in the same order and pages: the entries of the pets the same pet
/// query finds.
pub fn the_stock_list_filters_as_the_pets_list_does<S: Store>(store: S) {
    let f = Fixture::new(store);
    let cats = f
        .shop
        .categories()
        .create(OPERATOR, NewCategory::new(name("Cats")), None)
        .made("create Cats");
    let rex = f.pet_with_stock("Rex", 0);
    let rover = f.pet_with_stock("Rover", 3);
    let cat = |pet_name: &str, units: u32| {
        let pet = f
            .shop
            .pets()
            .create(OPERATOR, NewPet::new(name(pet_name), cats.id), None)
            .made("create a cat");
        f.shop
            .inventory()
            .set_stock(OPERATOR, pet.id, Stock::from_level(units), Always)
            .must("stock the cat");
        pet
    };
    let tom = cat("Tom", 1);
    let tiger = cat("Tiger", 10);
    let entries = |query: InventoryQuery| {
        let page = f.shop.inventory().list(&query).must("list the stock");
        (
            page.items
                .iter()
                .map(|item| item.pet_id)
                .collect::<Vec<_>>(),
            page.next_after,
        )
    };
    let low = InventoryQuery {
        stock_at_most: Some(Stock::from_level(1)),
        ..InventoryQuery::default()
    };
    assert_eq!(entries(low.clone()), (vec![rex.id, tom.id], None));
    let first = InventoryQuery {
        limit: PageSize::new(1).must("size"),
        ..low.clone()
    };
    assert_eq!(entries(first.clone()), (vec![rex.id], Some(rex.id.get())));
    let second = InventoryQuery {
        after: Some(rex.id),
        ..first
    };
    assert_eq!(entries(second), (vec![tom.id], None));
    let out = InventoryQuery {
        stock_at_most: Some(Stock::ZERO),
        ..InventoryQuery::default()
    };
    assert_eq!(entries(out).0, vec![rex.id]);
    let tigers = InventoryQuery {
        category_id: Some(cats.id),
        name_contains: Some("TI".into()),
        ..InventoryQuery::default()
    };
    assert_eq!(entries(tigers).0, vec![tiger.id]);
    // The pets of each query are the pets whose entries it lists.
    for query in [low, InventoryQuery::default()] {
        let pets = f.shop.pets().list(&query.pets()).must("list the pets");
        let ids: Vec<_> = pets.items.iter().map(|pet| pet.id).collect();
        assert_eq!(ids, entries(query).0);
    }
    let in_stock = f
        .shop
        .pets()
        .list(&PetQuery::default().stock_at_most(Some(Stock::from_level(3))));
    assert!(
        in_stock
            .must("pets with at most 3")
            .items
            .iter()
            .all(|pet| pet.id != tiger.id)
    );
    assert_ne!(rover.id, tiger.id);
}

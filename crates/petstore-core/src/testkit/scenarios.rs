//! One scenario per rule of the contract. Each takes a fresh, empty store.

use std::sync::{Arc, Barrier};

use chrono::{DateTime, Utc};

use super::{Must, all_pages};
use crate::{
    ApiKey, Caller, CategoryId, CategoryQuery, DomainError, EventType, InventoryQuery, KeyId,
    KeyQuery, KeySecret, ManualClock, Name, NewApiKey, NewCategory, NewOrder, NewPet, Order,
    OrderId, OrderPatch, OrderQuery, OrderScope, OwnerId, PageSize, Pet, PetId, PetQuery,
    PetStatus, Quantity, Resource, Role, Service, Stock, Store,
};

/// The instant the kit's clock shows.
pub fn start_time() -> DateTime<Utc> {
    DateTime::from_timestamp(1_795_000_000, 0).unwrap_or_default()
}

/// A service over the store under test with a fixed clock and one category, "Dogs".
#[derive(Debug)]
pub struct Fixture<S> {
    /// The use cases over the store under test.
    pub shop: Service<S, Arc<ManualClock>>,
    /// The clock the service reads.
    pub clock: Arc<ManualClock>,
    /// A category that exists.
    pub dogs: CategoryId,
}

impl<S: Store> Fixture<S> {
    /// Sets up the fixture on `store`.
    pub fn new(store: S) -> Self {
        let clock = Arc::new(ManualClock::new(start_time()));
        let shop = Service::with_clock(store, Arc::clone(&clock));
        let dogs = shop
            .create_category(NewCategory::new(name("Dogs")))
            .must("create the Dogs category")
            .id;
        Self { shop, clock, dogs }
    }

    /// A new `available` pet in Dogs, with `stock` units.
    pub fn pet_with_stock(&self, pet_name: &str, stock: u32) -> Pet {
        let pet = self
            .shop
            .create_pet(NewPet::new(name(pet_name), self.dogs))
            .must("create a pet");
        if stock > 0 {
            self.shop
                .set_stock(pet.id, Stock::from_level(stock))
                .must("stock the pet");
        }
        pet
    }

    /// Places an order of `quantity` units, owned by nobody in particular.
    pub fn order(&self, pet: PetId, quantity: i64) -> Result<Order, DomainError> {
        self.shop
            .place_order(NewOrder::new(pet, qty(quantity)), None)
    }

    /// Completes an order.
    pub fn complete(&self, order: OrderId) -> Order {
        self.shop
            .update_order(
                order,
                OrderPatch {
                    complete: Some(true),
                    ..OrderPatch::default()
                },
            )
            .must("complete the order")
    }

    /// The pet's status and stock.
    pub fn state_of(&self, pet: PetId) -> (PetStatus, u32) {
        let item = self.shop.get_inventory_item(pet).must("read the inventory");
        let status = self.shop.get_pet(pet).must("read the pet").status;
        assert_eq!(
            item.status, status,
            "an inventory entry shows its pet's status"
        );
        (status, item.quantity.get())
    }

    /// The types of the events recorded after event number `after` (0 for all).
    pub fn event_types_after(&self, after: usize) -> Vec<EventType> {
        let mut types = Vec::new();
        let mut cursor = None;
        loop {
            let batch = self
                .shop
                .events_after(cursor, PageSize::new(100).must("page size"))
                .must("read events");
            let Some(last) = batch.last() else { break };
            cursor = Some(last.id);
            types.extend(batch.iter().map(|e| e.event_type));
        }
        types.split_off(after.min(types.len()))
    }

    /// How many events are recorded.
    pub fn event_count(&self) -> usize {
        self.event_types_after(0).len()
    }
}

/// A valid name, for test code.
pub fn name(text: &str) -> Name {
    Name::parse(text).must("a valid name")
}

/// A valid quantity, for test code.
pub fn qty(units: i64) -> Quantity {
    Quantity::new(units).must("a valid quantity")
}

fn code<T: std::fmt::Debug>(result: Result<T, DomainError>) -> &'static str {
    match result {
        Ok(value) => panic!("expected a refusal, got {value:?}"),
        Err(error) => error.code(),
    }
}

/// Category names are unique, compared without regard to case (Unicode too).
pub fn category_names_are_unique_regardless_of_case<S: Store>(store: S) {
    let f = Fixture::new(store);
    assert_eq!(
        code(f.shop.create_category(NewCategory::new(name("DOGS")))),
        "category_exists"
    );
    let cats = f
        .shop
        .create_category(NewCategory::new(name("Éclair cats")))
        .must("create a second category");
    assert_eq!(
        code(
            f.shop
                .create_category(NewCategory::new(name("éCLAIR CATS")))
        ),
        "category_exists"
    );
    assert_eq!(
        code(
            f.shop
                .replace_category(cats.id, NewCategory::new(name("dogs")))
        ),
        "category_exists",
        "renaming onto another category's name"
    );
    let renamed = f
        .shop
        .replace_category(cats.id, NewCategory::new(name("ÉCLAIR CATS")))
        .must("a category may change the case of its own name");
    assert_eq!(renamed.name.as_str(), "ÉCLAIR CATS");
    assert_eq!(f.shop.get_category(cats.id).must("read back"), renamed);
}

/// A category that pets belong to cannot be deleted; an empty one can.
pub fn a_category_with_pets_cannot_be_deleted<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 0);
    assert_eq!(code(f.shop.delete_category(f.dogs)), "category_in_use");
    f.shop.delete_pet(rex.id).must("delete the pet");
    f.shop
        .delete_category(f.dogs)
        .must("delete the empty category");
    assert_eq!(code(f.shop.get_category(f.dogs)), "not_found");
}

/// A pet must name an existing category, on create and on replace.
pub fn pets_need_an_existing_category<S: Store>(store: S) {
    let f = Fixture::new(store);
    let nowhere = CategoryId::new(999).must("id");
    assert_eq!(
        code(f.shop.create_pet(NewPet::new(name("Rex"), nowhere))),
        "unknown_category"
    );
    let rex = f.pet_with_stock("Rex", 0);
    assert_eq!(
        code(
            f.shop
                .replace_pet(rex.id, NewPet::new(name("Rex"), nowhere))
        ),
        "unknown_category"
    );
    assert_eq!(f.shop.get_pet(rex.id).must("read back"), rex);
}

/// A new pet is `available` unless it says otherwise, with stock 0, and its inventory
/// entry goes when it goes.
pub fn a_new_pet_has_an_inventory_entry_at_zero<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 0);
    assert_eq!(rex.status, PetStatus::Available);
    assert_eq!(f.state_of(rex.id), (PetStatus::Available, 0));
    let held = f
        .shop
        .create_pet(NewPet::new(name("Held"), f.dogs).with_status(PetStatus::Pending))
        .must("create a pending pet");
    assert_eq!(f.state_of(held.id), (PetStatus::Pending, 0));
    f.shop.delete_pet(rex.id).must("delete");
    assert_eq!(code(f.shop.get_pet(rex.id)), "not_found");
    assert_eq!(code(f.shop.get_inventory_item(rex.id)), "not_found");
}

/// Operations on ids that do not exist say `not_found`, naming the resource.
pub fn replacing_and_deleting_missing_resources_is_not_found<S: Store>(store: S) {
    let f = Fixture::new(store);
    let pet = PetId::new(4242).must("id");
    let order = OrderId::new(4242).must("id");
    let category = CategoryId::new(4242).must("id");
    let not_found = |resource| DomainError::NotFound { resource, id: 4242 };
    assert_eq!(f.shop.get_pet(pet).err(), Some(not_found(Resource::Pet)));
    assert_eq!(
        f.shop
            .replace_pet(pet, NewPet::new(name("X"), f.dogs))
            .err(),
        Some(not_found(Resource::Pet))
    );
    assert_eq!(f.shop.delete_pet(pet).err(), Some(not_found(Resource::Pet)));
    assert_eq!(
        f.shop.set_stock(pet, Stock::ZERO).err(),
        Some(not_found(Resource::InventoryItem))
    );
    assert_eq!(
        f.shop.get_category(category).err(),
        Some(not_found(Resource::Category))
    );
    assert_eq!(
        f.shop
            .replace_category(category, NewCategory::new(name("X")))
            .err(),
        Some(not_found(Resource::Category))
    );
    assert_eq!(
        f.shop.delete_category(category).err(),
        Some(not_found(Resource::Category))
    );
    assert_eq!(
        f.shop.get_order(order, OrderScope::All).err(),
        Some(not_found(Resource::Order))
    );
    assert_eq!(
        f.shop.update_order(order, OrderPatch::default()).err(),
        Some(not_found(Resource::Order))
    );
    assert_eq!(
        f.shop.cancel_order(order, OrderScope::All).err(),
        Some(not_found(Resource::Order))
    );
    assert_eq!(f.event_count(), 1, "only the fixture's category.created");
}

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

/// An order must name an existing pet.
pub fn an_order_for_an_unknown_pet_is_refused<S: Store>(store: S) {
    let f = Fixture::new(store);
    assert_eq!(code(f.order(PetId::new(77).must("id"), 1)), "unknown_pet");
}

/// Only an `available` pet can be ordered, even with stock.
pub fn an_order_needs_an_available_pet<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 5);
    for status in [PetStatus::Pending, PetStatus::Sold] {
        f.shop
            .replace_pet(rex.id, NewPet::new(name("Rex"), f.dogs).with_status(status))
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
        .list_orders(&OrderQuery::default(), OrderScope::All)
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
    assert_eq!(
        code(f.shop.update_order(order.id, reopen)),
        "invalid_transition"
    );
    assert_eq!(
        code(f.shop.cancel_order(order.id, OrderScope::All)),
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
    assert!(
        f.shop
            .get_order(order.id, OrderScope::All)
            .must("read")
            .complete
    );
    assert_eq!(f.state_of(rex.id), (PetStatus::Available, 4));
}

/// Cancelling an open order removes it, puts its units back and makes a `pending` pet
/// `available` again.
pub fn cancelling_puts_units_back_and_makes_the_pet_available<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 2);
    let order = f.order(rex.id, 2).must("order all");
    assert_eq!(f.state_of(rex.id), (PetStatus::Pending, 0));
    f.shop
        .cancel_order(order.id, OrderScope::All)
        .must("cancel");
    assert_eq!(f.state_of(rex.id), (PetStatus::Available, 2));
    assert_eq!(
        code(f.shop.get_order(order.id, OrderScope::All)),
        "not_found"
    );
    assert_eq!(
        code(f.shop.cancel_order(order.id, OrderScope::All)),
        "not_found"
    );
}

/// Stock makes a `pending` or `sold` pet `available`; no stock makes an `available` pet
/// `pending` while orders are open and `sold` otherwise.
pub fn stock_updates_drive_the_status<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 3);
    let order = f.order(rex.id, 1).must("order");
    f.shop
        .set_stock(rex.id, Stock::ZERO)
        .must("empty the stock");
    assert_eq!(
        f.state_of(rex.id),
        (PetStatus::Pending, 0),
        "an order is open"
    );
    f.shop
        .set_stock(rex.id, Stock::from_level(4))
        .must("restock");
    assert_eq!(f.state_of(rex.id), (PetStatus::Available, 4));
    f.shop
        .cancel_order(order.id, OrderScope::All)
        .must("cancel");
    let item = f.shop.set_stock(rex.id, Stock::ZERO).must("empty again");
    assert_eq!(
        (item.status, item.quantity),
        (PetStatus::Sold, Stock::ZERO),
        "no order is open"
    );
    f.shop
        .set_stock(rex.id, Stock::from_level(1))
        .must("restock a sold pet");
    assert_eq!(f.state_of(rex.id), (PetStatus::Available, 1));
}

/// Staff may set any status through a replace; the change is recorded as a status change.
pub fn staff_may_set_any_status_and_it_is_recorded<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 3);
    let before = f.event_count();
    let sold = f
        .shop
        .replace_pet(
            rex.id,
            NewPet::new(name("Rex"), f.dogs).with_status(PetStatus::Sold),
        )
        .must("staff mark the pet sold");
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
    f.shop
        .replace_pet(
            rex.id,
            NewPet::new(name("Rex"), f.dogs).with_status(PetStatus::Sold),
        )
        .must("replace with the same state");
    assert_eq!(
        f.event_count(),
        unchanged,
        "a replace that changes nothing records nothing"
    );
}

/// A pet with open orders cannot be deleted; once they are closed it can, and its
/// complete orders remain.
pub fn a_pet_with_open_orders_cannot_be_deleted<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 2);
    let order = f.order(rex.id, 1).must("order");
    assert_eq!(code(f.shop.delete_pet(rex.id)), "pet_has_open_orders");
    assert_eq!(f.state_of(rex.id), (PetStatus::Available, 1));
    f.complete(order.id);
    f.shop.delete_pet(rex.id).must("delete after completion");
    assert_eq!(code(f.shop.get_pet(rex.id)), "not_found");
    let kept = f
        .shop
        .get_order(order.id, OrderScope::All)
        .must("the complete order stays");
    assert!(kept.complete);
}

/// A customer sees, lists and cancels only its own orders; another's order does not exist
/// for it. Staff see all.
pub fn customers_see_only_their_own_orders<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 10);
    let alice = OwnerId::new(1).must("id");
    let bob = OwnerId::new(2).must("id");
    let place = |owner| {
        f.shop
            .place_order(NewOrder::new(rex.id, qty(1)), Some(owner))
    };
    let alices = place(alice).must("alice orders");
    let bobs = place(bob).must("bob orders");
    assert_eq!(alices.owner, Some(alice));

    let as_alice = OrderScope::OwnedBy(alice);
    assert_eq!(
        f.shop
            .get_order(alices.id, as_alice)
            .must("alice reads hers"),
        alices
    );
    assert_eq!(code(f.shop.get_order(bobs.id, as_alice)), "not_found");
    assert_eq!(code(f.shop.cancel_order(bobs.id, as_alice)), "not_found");
    let listed = f
        .shop
        .list_orders(&OrderQuery::default(), as_alice)
        .must("alice lists");
    assert_eq!(listed.items, vec![alices.clone()]);
    // A caller cannot widen its scope through the query.
    let sneaky = OrderQuery {
        owner: Some(bob),
        ..OrderQuery::default()
    };
    assert_eq!(
        f.shop
            .list_orders(&sneaky, as_alice)
            .must("alice lists")
            .items,
        vec![alices.clone()]
    );

    let all = f
        .shop
        .list_orders(&OrderQuery::default(), OrderScope::All)
        .must("staff list");
    assert_eq!(all.items.len(), 2);
    f.shop
        .cancel_order(bobs.id, OrderScope::OwnedBy(bob))
        .must("bob cancels his");
    assert_eq!(f.state_of(rex.id), (PetStatus::Available, 9));
}

/// Lists are ordered by id, paged by keyset without gaps or repeats, and filtered.
pub fn lists_page_by_id_with_filters<S: Store>(store: S) {
    let f = Fixture::new(store);
    let cats = f
        .shop
        .create_category(NewCategory::new(name("Cats")))
        .must("create Cats");
    let mut created = Vec::new();
    for i in 0..25 {
        let category = if i % 5 == 0 { cats.id } else { f.dogs };
        let label = if i % 2 == 0 {
            format!("Bello {i}")
        } else {
            format!("ÉMILE {i}")
        };
        created.push(
            f.shop
                .create_pet(NewPet::new(name(&label), category))
                .must("create a pet"),
        );
    }
    let limit = PageSize::new(10).must("page size");
    let (seen, pages) = all_pages(|after| {
        let query = PetQuery {
            after,
            limit,
            ..PetQuery::default()
        };
        f.shop.list_pets(&query).must("list")
    });
    assert_eq!(pages, 3);
    assert_eq!(seen, created, "every pet once, by id");

    let in_cats = f
        .shop
        .list_pets(&PetQuery {
            category_id: Some(cats.id),
            ..PetQuery::default()
        })
        .must("filter by category");
    assert_eq!(in_cats.items.len(), 5);
    assert!(in_cats.items.iter().all(|p| p.category_id == cats.id));

    let emiles = f
        .shop
        .list_pets(&PetQuery {
            name_contains: Some("émile".into()),
            ..PetQuery::default()
        })
        .must("filter by name");
    assert_eq!(
        emiles.items.len(),
        12,
        "name search ignores case, beyond ASCII"
    );

    let picked = vec![created[3].id, created[17].id, PetId::new(9999).must("id")];
    let by_id = f
        .shop
        .list_pets(&PetQuery {
            ids: picked,
            ..PetQuery::default()
        })
        .must("filter by id");
    assert_eq!(by_id.items, vec![created[3].clone(), created[17].clone()]);

    f.shop
        .set_stock(created[0].id, Stock::ZERO)
        .must("sell out pet 0");
    let sold = f
        .shop
        .list_pets(&PetQuery {
            status: Some(PetStatus::Sold),
            ..PetQuery::default()
        })
        .must("filter by status");
    assert_eq!(
        sold.items.iter().map(|p| p.id).collect::<Vec<_>>(),
        vec![created[0].id]
    );
    let sold_stock = f
        .shop
        .list_inventory(&InventoryQuery {
            status: Some(PetStatus::Sold),
            ..InventoryQuery::default()
        })
        .must("inventory by status");
    assert_eq!(sold_stock.items.len(), 1);
    let inventory = f
        .shop
        .list_inventory(&InventoryQuery {
            after: Some(created[19].id),
            ..InventoryQuery::default()
        })
        .must("inventory after");
    assert_eq!(inventory.items.len(), 5);
    assert_eq!(inventory.next_after, None);

    let categories = f
        .shop
        .list_categories(&CategoryQuery {
            limit: PageSize::new(1).must("size"),
            after: None,
        })
        .must("categories");
    assert_eq!(categories.items.len(), 1);
    assert_eq!(categories.next_after, Some(f.dogs.get()));
}

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
    f.shop.delete_pet(rex.id).must("delete");
    f.shop.delete_category(f.dogs).must("delete category");
    assert_eq!(
        f.event_types_after(before),
        vec![PetDeleted, CategoryDeleted]
    );

    let events = f
        .shop
        .events_after(None, PageSize::new(100).must("size"))
        .must("read events");
    assert!(events.windows(2).all(|w| w[0].id < w[1].id), "ids increase");
    assert_eq!(
        f.shop.last_event_id().must("the latest id"),
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
    let after_third = f
        .shop
        .events_after(Some(events[2].id), PageSize::new(2).must("size"))
        .must("read a page of events");
    assert_eq!(after_third, events[3..5].to_vec());
}

/// Ship dates can be set and cleared on an order, and the change is recorded.
pub fn ship_dates_can_be_set_and_cleared<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 5);
    let order = f.order(rex.id, 1).must("order");
    let when = start_time() + chrono::Duration::days(3);
    let before = f.event_count();
    let dated = f
        .shop
        .update_order(
            order.id,
            OrderPatch {
                ship_date: Some(Some(when)),
                complete: None,
            },
        )
        .must("set the ship date");
    assert_eq!(dated.ship_date, Some(when));
    assert_eq!(
        f.shop.get_order(order.id, OrderScope::All).must("read"),
        dated
    );
    assert_eq!(f.event_types_after(before), vec![EventType::OrderUpdated]);
    let cleared = f
        .shop
        .update_order(
            order.id,
            OrderPatch {
                ship_date: Some(None),
                complete: None,
            },
        )
        .must("clear the ship date");
    assert_eq!(cleared.ship_date, None);
    assert!(!cleared.complete);
    assert_eq!(
        f.state_of(rex.id),
        (PetStatus::Available, 4),
        "stock is untouched"
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
        .list_orders(
            &OrderQuery {
                limit: PageSize::new(100).must("size"),
                ..OrderQuery::default()
            },
            OrderScope::All,
        )
        .must("list orders");
    assert_eq!(orders.items.len(), UNITS as usize);
}

fn secret(seed: u8) -> KeySecret {
    KeySecret::from_random([seed; 32])
}

fn new_key(name_text: &str, role: Role) -> NewApiKey {
    NewApiKey {
        name: name(name_text),
        role,
    }
}

/// A key authenticates as its role until revoked; a wrong secret with the same prefix, and a
/// revoked key, authenticate nothing; secrets are stored only as hashes.
pub fn keys_authenticate_until_revoked<S: Store>(store: S) {
    let f = Fixture::new(store);
    let alice_secret = secret(1);
    let alice = f
        .shop
        .create_key(new_key("Alice", Role::Customer), &alice_secret)
        .must("create a key");
    assert_eq!(
        (alice.role, alice.prefix.as_str(), alice.revoked_at),
        (Role::Customer, alice_secret.prefix(), None)
    );
    assert_eq!(alice.created_at, start_time());
    assert_eq!(
        f.shop.authenticate(&alice_secret).must("authenticate"),
        Some(Caller {
            key: alice.id,
            role: Role::Customer
        })
    );
    // Same prefix, different secret: not Alice.
    let mut forged = alice_secret.reveal().to_owned();
    forged.pop();
    forged.push('x');
    let forged = KeySecret::parse(&forged).must("a well-formed secret");
    assert_eq!(f.shop.authenticate(&forged).must("authenticate"), None);
    assert_eq!(f.shop.authenticate(&secret(9)).must("authenticate"), None);

    let stored = f
        .shop
        .store()
        .read(|s| s.keys_with_prefix(alice_secret.prefix()))
        .must("read keys");
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].hash, alice_secret.hash(), "only the hash is kept");

    assert_eq!(
        code(f.shop.revoke_key(alice.id, Some(alice.id))),
        "invalid_transition",
        "a key cannot revoke itself"
    );
    assert!(
        f.shop
            .authenticate(&alice_secret)
            .must("authenticate")
            .is_some()
    );
    f.shop.revoke_key(alice.id, None).must("revoke");
    f.shop
        .revoke_key(alice.id, None)
        .must("revoking again changes nothing");
    assert_eq!(
        f.shop.authenticate(&alice_secret).must("authenticate"),
        None
    );
    let listed = f.shop.list_keys(&KeyQuery::default()).must("list keys");
    assert_eq!(listed.items.len(), 1);
    assert_eq!(
        listed.items[0].revoked_at,
        Some(start_time()),
        "a revoked key stays listed"
    );
    assert_eq!(
        code(f.shop.revoke_key(KeyId::new(99).must("id"), None)),
        "not_found"
    );
}

/// The bootstrap admin key is created only while no admin key is active, and the first
/// admin key only while there is no key at all.
pub fn admin_keys_are_bootstrapped_once<S: Store>(store: S) {
    let f = Fixture::new(store);
    let first = f
        .shop
        .create_first_admin_key(&secret(1))
        .must("first start");
    let first: ApiKey = first.must("a first admin key on an empty store");
    assert_eq!(first.role, Role::Admin);
    assert_eq!(
        f.shop
            .create_first_admin_key(&secret(2))
            .must("second start"),
        None
    );
    assert_eq!(
        f.shop.ensure_admin_key(&secret(3)).must("bootstrap"),
        None,
        "an admin is active"
    );

    f.shop
        .revoke_key(first.id, None)
        .must("revoke the only admin");
    let staff = f
        .shop
        .create_key(new_key("Clerk", Role::Staff), &secret(4))
        .must("create staff");
    assert_eq!(
        f.shop.create_first_admin_key(&secret(5)).must("a start"),
        None,
        "keys exist"
    );
    let bootstrap = f
        .shop
        .ensure_admin_key(&secret(6))
        .must("bootstrap")
        .must("no admin is active");
    assert_eq!(bootstrap.role, Role::Admin);
    assert!(bootstrap.id > staff.id);
    assert_eq!(
        f.shop
            .authenticate(&secret(6))
            .must("authenticate")
            .map(|c| c.role),
        Some(Role::Admin)
    );
}

/// A conditional change applies only while its condition holds for the current state; a
/// refused one changes nothing and records nothing.
pub fn conditional_changes_apply_only_to_the_state_they_expect<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 2);
    let events = f.event_count();
    let stale = rex.clone();
    let renamed = f
        .shop
        .replace_pet_if(rex.id, NewPet::new(name("Rex II"), f.dogs), |now: &Pet| {
            *now == rex
        })
        .must("the pet is as read");
    let refused =
        f.shop
            .replace_pet_if(rex.id, NewPet::new(name("Rex III"), f.dogs), |now: &Pet| {
                *now == stale
            });
    assert_eq!(
        refused.err(),
        Some(DomainError::PreconditionFailed(Resource::Pet))
    );
    assert_eq!(f.shop.get_pet(rex.id).must("read"), renamed);

    let item = f.shop.get_inventory_item(rex.id).must("read stock");
    let refused = f
        .shop
        .set_stock_if(rex.id, Stock::ZERO, |now: &crate::InventoryItem| {
            now.quantity.get() == 99
        });
    assert_eq!(code(refused), "precondition_failed");
    f.shop
        .set_stock_if(
            rex.id,
            Stock::from_level(5),
            |now: &crate::InventoryItem| *now == item,
        )
        .must("as read");

    let order = f.order(rex.id, 1).must("order");
    assert_eq!(
        code(
            f.shop
                .cancel_order_if(order.id, OrderScope::All, |_: &Order| false)
        ),
        "precondition_failed"
    );
    assert_eq!(
        code(
            f.shop
                .delete_category_if(f.dogs, |_: &crate::Category| false)
        ),
        "precondition_failed"
    );
    assert_eq!(f.state_of(rex.id), (PetStatus::Available, 4));
    assert_eq!(
        f.event_types_after(events),
        vec![
            EventType::PetUpdated,
            EventType::InventoryUpdated,
            EventType::OrderPlaced,
            EventType::InventoryUpdated
        ],
        "renamed, restocked, ordered; the refusals recorded nothing"
    );
}

/// Two clients replace a pet from the same state at once: exactly one wins, the other is
/// told the pet changed.
pub fn racing_conditional_replacements_let_exactly_one_win<S: Store + Sync>(store: S) {
    let f = Fixture::new(store);
    for round in 0..10 {
        let pet = f.pet_with_stock(&format!("Pet {round}"), 0);
        let start = Barrier::new(2);
        let outcomes: Vec<Result<Pet, DomainError>> = std::thread::scope(|scope| {
            let racers: Vec<_> = ["Left", "Right"]
                .into_iter()
                .map(|label| {
                    let (f, pet, start) = (&f, &pet, &start);
                    scope.spawn(move || {
                        start.wait();
                        let new = NewPet::new(name(label), f.dogs);
                        f.shop.replace_pet_if(pet.id, new, |now: &Pet| now == pet)
                    })
                })
                .collect();
            racers
                .into_iter()
                .map(|racer| racer.join().unwrap_or_else(|_| panic!("a racer panicked")))
                .collect()
        });
        let winners: Vec<&Pet> = outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
        assert_eq!(winners.len(), 1, "round {round}: {outcomes:?}");
        assert!(
            outcomes
                .iter()
                .any(|o| matches!(o, Err(DomainError::PreconditionFailed(_))))
        );
        assert_eq!(
            &f.shop.get_pet(pet.id).must("read"),
            winners[0],
            "the winner's state stays"
        );
    }
}

fn idempotency_key(owner: i64, key: &str, body: &str) -> crate::IdempotencyKey {
    let owner = OwnerId::new(owner).must("id");
    crate::IdempotencyKey::new(owner, key, "POST", "/v1/store/orders", body.as_bytes())
        .must("a valid key")
}

fn render_order(order: &Order) -> crate::RecordedResponse {
    crate::RecordedResponse {
        status: 201,
        headers: vec![("Location".into(), format!("/v1/store/orders/{}", order.id))],
        body: serde_json::to_vec(order).unwrap_or_default(),
    }
}

/// A create sent again with the same idempotency key and request gets the first response and
/// changes nothing; another request under the same key is refused; other callers' keys are
/// theirs; a refused request records nothing; a record is forgotten after its lifetime.
pub fn idempotent_creates_replay_and_change_nothing<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 3);
    let new = NewOrder::new(rex.id, qty(1));
    let key = idempotency_key(1, "order-1", "one unit");
    let first = f
        .shop
        .place_order_once(new.clone(), None, &key, render_order)
        .must("first");
    let events = f.event_count();
    let again = f
        .shop
        .place_order_once(new.clone(), None, &key, render_order)
        .must("retry");
    assert_eq!(again, first, "the same response");
    assert_eq!(f.event_count(), events, "the retry recorded nothing");
    assert_eq!(
        f.state_of(rex.id),
        (PetStatus::Available, 2),
        "one unit taken, once"
    );

    let other_body = idempotency_key(1, "order-1", "two units");
    let reused = f.shop.place_order_once(
        NewOrder::new(rex.id, qty(2)),
        None,
        &other_body,
        render_order,
    );
    assert_eq!(reused.err(), Some(DomainError::IdempotencyKeyReused));

    let other_caller = idempotency_key(2, "order-1", "one unit");
    let theirs = f
        .shop
        .place_order_once(new.clone(), None, &other_caller, render_order)
        .must("theirs");
    assert_ne!(theirs, first, "another caller's key is another key");

    let too_many = idempotency_key(1, "order-2", "five units");
    let refused =
        f.shop
            .place_order_once(NewOrder::new(rex.id, qty(5)), None, &too_many, render_order);
    assert_eq!(code(refused), "insufficient_stock");
    f.shop
        .set_stock(rex.id, Stock::from_level(10))
        .must("restock");
    let placed =
        f.shop
            .place_order_once(NewOrder::new(rex.id, qty(5)), None, &too_many, render_order);
    assert_eq!(
        placed.must("a refused request's retry runs again").status,
        201
    );

    f.clock
        .advance(crate::RECORD_LIFETIME + chrono::Duration::seconds(1));
    let fresh = f
        .shop
        .place_order_once(new, None, &key, render_order)
        .must("after the lifetime");
    assert_ne!(fresh, first, "a forgotten key starts afresh");
}

/// 50 threads send one order with the same idempotency key at once: one order is placed and
/// all 50 get its response.
pub fn concurrent_retries_place_one_order<S: Store + Sync>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 100);
    let key = idempotency_key(1, "flaky-network", "one unit");
    let start = Barrier::new(50);
    let responses: Vec<crate::RecordedResponse> = std::thread::scope(|scope| {
        let racers: Vec<_> = (0..50)
            .map(|_| {
                scope.spawn(|| {
                    start.wait();
                    f.shop
                        .place_order_once(NewOrder::new(rex.id, qty(1)), None, &key, render_order)
                        .must("an idempotent order")
                })
            })
            .collect();
        racers
            .into_iter()
            .map(|racer| racer.join().unwrap_or_else(|_| panic!("a racer panicked")))
            .collect()
    });
    assert!(
        responses.windows(2).all(|w| w[0] == w[1]),
        "all got the same response"
    );
    assert_eq!(f.state_of(rex.id), (PetStatus::Available, 99));
    let orders = f
        .shop
        .list_orders(&OrderQuery::default(), OrderScope::All)
        .must("list");
    assert_eq!(orders.items.len(), 1);
}

fn webhook_to(f: &Fixture<impl Store>, types: &[EventType]) -> crate::Webhook {
    let new = crate::NewWebhook {
        url: crate::WebhookUrl::parse("https://hooks.example.com/petstore").must("a valid URL"),
        events: crate::EventTypes::new(types.to_vec()).must("valid event types"),
    };
    f.shop
        .create_webhook(new, &crate::WebhookSecret::from_random([9; 32]))
        .must("create a webhook")
}

fn answered(status: u16) -> crate::AttemptReport {
    crate::AttemptReport {
        status_code: Some(status),
        error: None,
    }
}

/// A subscription receives, one at a time and in order, the events of its types recorded after
/// it was created; the cursor moves only on a 2xx; a failure waits out the retry delay and the
/// same event comes again; every attempt is listed.
pub fn webhooks_deliver_matching_events_in_order_and_retry_failures<S: Store>(store: S) {
    use EventType::*;
    let f = Fixture::new(store);
    let policy = crate::RetryPolicy::default();
    let before = f.pet_with_stock("Before", 3);
    f.order(before.id, 1).must("an order before the webhook");
    let hook = webhook_to(&f, &[OrderPlaced, OrderCancelled]);
    assert_eq!(
        hook.delivery.delivered_through,
        f.shop.last_event_id().must("the latest id"),
        "a new subscription starts after the latest event"
    );
    assert_eq!(f.shop.next_delivery(hook.id).must("next"), None);

    let rex = f.pet_with_stock("Rex", 5);
    let first = f.order(rex.id, 1).must("order");
    f.shop
        .cancel_order(first.id, OrderScope::All)
        .must("cancel");

    let pending = f
        .shop
        .next_delivery(hook.id)
        .must("next")
        .must("a delivery");
    assert_eq!(pending.event.event_type, OrderPlaced);
    assert_eq!(pending.attempt, 1);
    assert_eq!(pending.url.as_str(), "https://hooks.example.com/petstore");
    let placed_id = pending.event.id;
    let attempt = f
        .shop
        .record_delivery(&pending, answered(204), &policy)
        .must("record")
        .must("a recorded attempt");
    assert_eq!(attempt.outcome, crate::DeliveryOutcome::Delivered);
    assert_eq!(
        f.shop
            .record_delivery(&pending, answered(204), &policy)
            .must("record again"),
        None,
        "a second report on a delivered event counts for nothing"
    );

    let pending = f
        .shop
        .next_delivery(hook.id)
        .must("next")
        .must("a delivery");
    assert_eq!(pending.event.event_type, OrderCancelled);
    assert!(pending.event.id > placed_id);
    let failed = f
        .shop
        .record_delivery(&pending, answered(503), &policy)
        .must("record")
        .must("a recorded attempt");
    assert_eq!(failed.outcome, crate::DeliveryOutcome::Failed);
    let retry_at = start_time() + chrono::Duration::seconds(5);
    assert_eq!(failed.next_attempt_at, Some(retry_at));
    assert_eq!(f.shop.next_delivery(hook.id).must("next"), None, "waiting");
    assert!(!f.shop.webhooks_due().must("due").contains(&hook.id));

    f.clock.set(retry_at);
    assert!(f.shop.webhooks_due().must("due").contains(&hook.id));
    let again = f.shop.next_delivery(hook.id).must("next").must("the retry");
    assert_eq!((again.event.id, again.attempt), (pending.event.id, 2));
    let failed = f
        .shop
        .record_delivery(&again, answered(500), &policy)
        .must("record")
        .must("a recorded attempt");
    assert_eq!(
        failed.next_attempt_at,
        Some(retry_at + chrono::Duration::seconds(10)),
        "the delay doubles"
    );
    f.clock.set(retry_at + chrono::Duration::seconds(10));
    let third = f.shop.next_delivery(hook.id).must("next").must("the retry");
    assert_eq!(third.attempt, 3);
    f.shop
        .record_delivery(&third, answered(200), &policy)
        .must("record");
    assert_eq!(
        f.shop.next_delivery(hook.id).must("next"),
        None,
        "up to date"
    );
    let state = f.shop.get_webhook(hook.id).must("read").delivery;
    assert_eq!(
        state.delivered_through,
        f.shop.last_event_id().must("latest"),
        "delivered, then past the later events of other types"
    );
    assert_eq!((state.failed_attempts, state.next_attempt_at), (0, None));

    let (attempts, _) = all_pages(|after| {
        f.shop
            .list_deliveries(
                hook.id,
                &crate::DeliveryQuery {
                    after,
                    limit: PageSize::new(2).must("size"),
                },
            )
            .must("list deliveries")
    });
    let summary: Vec<_> = attempts
        .iter()
        .map(|a| (a.event_type, a.attempt, a.outcome, a.status_code))
        .collect();
    use crate::DeliveryOutcome::{Delivered, Failed};
    assert_eq!(
        summary,
        vec![
            (OrderPlaced, 1, Delivered, Some(204)),
            (OrderCancelled, 1, Failed, Some(503)),
            (OrderCancelled, 2, Failed, Some(500)),
            (OrderCancelled, 3, Delivered, Some(200)),
        ]
    );
}

/// Events a subscription does not receive are stepped over and its cursor moves past them;
/// subscriptions are listed, and deleting one forgets it and its attempts.
pub fn webhooks_skip_other_events_and_can_be_deleted<S: Store>(store: S) {
    let f = Fixture::new(store);
    let orders = webhook_to(&f, &[EventType::OrderPlaced]);
    let pets = webhook_to(&f, &[EventType::PetCreated, EventType::PetDeleted]);
    let rex = f.pet_with_stock("Rex", 2);
    assert_eq!(f.shop.next_delivery(orders.id).must("next"), None);
    assert_eq!(
        f.shop
            .get_webhook(orders.id)
            .must("read")
            .delivery
            .delivered_through,
        f.shop.last_event_id().must("latest"),
        "the cursor moved past the events it does not receive"
    );
    let pending = f
        .shop
        .next_delivery(pets.id)
        .must("next")
        .must("pet.created");
    assert_eq!(pending.event.subject, format!("pets/{}", rex.id));

    let (listed, _) = all_pages(|after| {
        f.shop
            .list_webhooks(&crate::WebhookQuery {
                after,
                limit: PageSize::new(1).must("size"),
            })
            .must("list webhooks")
    });
    assert_eq!(
        listed.iter().map(|w| w.id).collect::<Vec<_>>(),
        vec![orders.id, pets.id]
    );

    f.shop
        .record_delivery(&pending, answered(500), &crate::RetryPolicy::default())
        .must("record");
    f.shop.delete_webhook(pets.id).must("delete");
    for refused in [
        f.shop.get_webhook(pets.id).map(|_| ()),
        f.shop.delete_webhook(pets.id),
        f.shop
            .list_deliveries(pets.id, &crate::DeliveryQuery::default())
            .map(|_| ()),
    ] {
        assert_eq!(
            refused,
            Err(DomainError::not_found(Resource::Webhook, pets.id))
        );
    }
    assert_eq!(f.shop.next_delivery(pets.id).must("next"), None);
    assert_eq!(
        f.shop
            .record_delivery(&pending, answered(200), &crate::RetryPolicy::default())
            .must("a late report"),
        None,
        "a report on a deleted subscription records nothing"
    );
    assert_eq!(
        f.shop.webhooks_due().must("due"),
        vec![],
        "up to date: nothing to do"
    );
    f.order(rex.id, 1).must("an order");
    assert_eq!(
        f.shop.webhooks_due().must("due"),
        vec![orders.id],
        "only the remaining subscription, now that it has an event"
    );
}

/// A store keeps the latest attempts of a subscription when told to forget the older ones,
/// and leaves other subscriptions' attempts alone.
pub fn old_delivery_attempts_are_pruned<S: Store>(store: S) {
    let f = Fixture::new(store);
    let pruned = webhook_to(&f, &[EventType::PetCreated]);
    let other = webhook_to(&f, &[EventType::PetCreated]);
    f.pet_with_stock("Rex", 0);
    let policy = crate::RetryPolicy::default();
    for hook in [pruned.id, other.id] {
        for _ in 0..4 {
            let pending = f.shop.next_delivery(hook).must("next").must("pet.created");
            f.shop
                .record_delivery(&pending, answered(500), &policy)
                .must("record");
            f.clock.advance(chrono::Duration::hours(2));
        }
    }
    let attempts = |hook| {
        f.shop
            .list_deliveries(hook, &crate::DeliveryQuery::default())
            .must("list")
            .items
            .into_iter()
            .map(|a| a.attempt)
            .collect::<Vec<_>>()
    };
    assert_eq!(attempts(pruned.id), vec![1, 2, 3, 4]);
    f.shop
        .store()
        .write(|tx| tx.prune_delivery_attempts(pruned.id, 2))
        .must("prune");
    assert_eq!(attempts(pruned.id), vec![3, 4], "the latest two are kept");
    assert_eq!(attempts(other.id), vec![1, 2, 3, 4], "others untouched");
    f.shop
        .store()
        .write(|tx| tx.prune_delivery_attempts(pruned.id, 5))
        .must("prune nothing");
    assert_eq!(attempts(pruned.id), vec![3, 4]);
}

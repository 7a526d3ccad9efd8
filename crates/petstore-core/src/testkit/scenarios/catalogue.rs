//! The catalogue: categories and pets, their lists, and conditional changes.

use std::sync::Barrier;

use super::{Fixture, OPERATOR, code, name};
use crate::testkit::{Made, Must, all_pages};
use crate::{
    Always, Category, CategoryId, CategoryQuery, DomainError, InventoryItem, InventoryQuery,
    NewCategory, NewPet, Order, OrderId, OrderPatch, PageSize, Pet, PetId, PetQuery, PetStatus,
    Resource, Stock, Store,
};

/// Category names are unique, compared without regard to case (Unicode too).
pub fn category_names_are_unique_regardless_of_case<S: Store>(store: S) {
    let f = Fixture::new(store);
    let categories = f.shop.categories();
    let create = |text: &str| categories.create(OPERATOR, NewCategory::new(name(text)), None);
    assert_eq!(code(create("DOGS")), "category_exists");
    let cats = create("Éclair cats").made("create a second category");
    assert_eq!(code(create("éCLAIR CATS")), "category_exists");
    let rename =
        |text: &str| categories.replace(OPERATOR, cats.id, NewCategory::new(name(text)), Always);
    assert_eq!(
        code(rename("dogs")),
        "category_exists",
        "renaming onto another category's name"
    );
    let renamed = rename("ÉCLAIR CATS").must("a category may change the case of its own name");
    assert_eq!(renamed.name.as_str(), "ÉCLAIR CATS");
    assert_eq!(categories.get(cats.id).must("read back"), renamed);
}

/// A category that pets belong to cannot be deleted; an empty one can.
pub fn a_category_with_pets_cannot_be_deleted<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 0);
    let categories = f.shop.categories();
    assert_eq!(
        code(categories.delete(OPERATOR, f.dogs, Always)),
        "category_in_use"
    );
    f.shop
        .pets()
        .delete(OPERATOR, rex.id, Always)
        .must("delete the pet");
    categories
        .delete(OPERATOR, f.dogs, Always)
        .must("delete the empty category");
    assert_eq!(code(categories.get(f.dogs)), "not_found");
}

/// A pet must name an existing category, on create and on replace.
pub fn pets_need_an_existing_category<S: Store>(store: S) {
    let f = Fixture::new(store);
    let nowhere = CategoryId::new(999).must("id");
    let pets = f.shop.pets();
    assert_eq!(
        code(pets.create(OPERATOR, NewPet::new(name("Rex"), nowhere), None)),
        "unknown_category"
    );
    let rex = f.pet_with_stock("Rex", 0);
    assert_eq!(
        code(pets.replace(OPERATOR, rex.id, NewPet::new(name("Rex"), nowhere), Always)),
        "unknown_category"
    );
    assert_eq!(pets.get(rex.id).must("read back"), rex);
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
        .pets()
        .create(
            OPERATOR,
            NewPet::new(name("Held"), f.dogs).with_status(PetStatus::Pending),
            None,
        )
        .made("create a pending pet");
    assert_eq!(f.state_of(held.id), (PetStatus::Pending, 0));
    f.shop
        .pets()
        .delete(OPERATOR, rex.id, Always)
        .must("delete");
    assert_eq!(code(f.shop.pets().get(rex.id)), "not_found");
    assert_eq!(code(f.shop.inventory().get(rex.id)), "not_found");
}

/// Operations on ids that do not exist say `not_found`, naming the resource.
pub fn replacing_and_deleting_missing_resources_is_not_found<S: Store>(store: S) {
    let f = Fixture::new(store);
    let pet = PetId::new(4242).must("id");
    let order = OrderId::new(4242).must("id");
    let category = CategoryId::new(4242).must("id");
    let not_found = |resource| DomainError::NotFound { resource, id: 4242 };
    let (pets, categories, orders) = (f.shop.pets(), f.shop.categories(), f.shop.orders());
    assert_eq!(pets.get(pet).err(), Some(not_found(Resource::Pet)));
    assert_eq!(
        pets.replace(OPERATOR, pet, NewPet::new(name("X"), f.dogs), Always)
            .err(),
        Some(not_found(Resource::Pet))
    );
    assert_eq!(
        pets.delete(OPERATOR, pet, Always).err(),
        Some(not_found(Resource::Pet))
    );
    assert_eq!(
        f.shop
            .inventory()
            .set_stock(OPERATOR, pet, Stock::ZERO, Always)
            .err(),
        Some(not_found(Resource::InventoryItem))
    );
    assert_eq!(
        categories.get(category).err(),
        Some(not_found(Resource::Category))
    );
    assert_eq!(
        categories
            .replace(OPERATOR, category, NewCategory::new(name("X")), Always)
            .err(),
        Some(not_found(Resource::Category))
    );
    assert_eq!(
        categories.delete(OPERATOR, category, Always).err(),
        Some(not_found(Resource::Category))
    );
    assert_eq!(
        orders.get(OPERATOR, order).err(),
        Some(not_found(Resource::Order))
    );
    assert_eq!(
        orders
            .update(OPERATOR, order, OrderPatch::default(), Always)
            .err(),
        Some(not_found(Resource::Order))
    );
    assert_eq!(
        orders.cancel(OPERATOR, order, Always).err(),
        Some(not_found(Resource::Order))
    );
    assert_eq!(f.event_count(), 1, "only the fixture's category.created");
}

/// A pet with open orders cannot be deleted; once they are closed it can, and its
/// complete orders remain.
pub fn a_pet_with_open_orders_cannot_be_deleted<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 2);
    let order = f.order(rex.id, 1).must("order");
    assert_eq!(
        code(f.shop.pets().delete(OPERATOR, rex.id, Always)),
        "pet_has_open_orders"
    );
    assert_eq!(f.state_of(rex.id), (PetStatus::Available, 1));
    f.complete(order.id);
    f.shop
        .pets()
        .delete(OPERATOR, rex.id, Always)
        .must("delete after completion");
    assert_eq!(code(f.shop.pets().get(rex.id)), "not_found");
    let kept = f
        .shop
        .orders()
        .get(OPERATOR, order.id)
        .must("the complete order stays");
    assert!(kept.complete);
}

/// Lists are ordered by id, paged by keyset without gaps or repeats, and filtered.
pub fn lists_page_by_id_with_filters<S: Store>(store: S) {
    let f = Fixture::new(store);
    let (pets, inventory) = (f.shop.pets(), f.shop.inventory());
    let cats = f
        .shop
        .categories()
        .create(OPERATOR, NewCategory::new(name("Cats")), None)
        .made("create Cats");
    let mut created = Vec::new();
    for i in 0..25 {
        let category = if i % 5 == 0 { cats.id } else { f.dogs };
        let label = if i % 2 == 0 {
            format!("Bello {i}")
        } else {
            format!("ÉMILE {i}")
        };
        created.push(
            pets.create(OPERATOR, NewPet::new(name(&label), category), None)
                .made("create a pet"),
        );
    }
    let limit = PageSize::new(10).must("page size");
    let (seen, pages) = all_pages(|after| {
        let query = PetQuery {
            after,
            limit,
            ..PetQuery::default()
        };
        pets.list(&query).must("list")
    });
    assert_eq!(pages, 3);
    assert_eq!(seen, created, "every pet once, by id");

    let in_cats = pets
        .list(&PetQuery {
            category_id: Some(cats.id),
            ..PetQuery::default()
        })
        .must("filter by category");
    assert_eq!(in_cats.items.len(), 5);
    assert!(in_cats.items.iter().all(|p| p.category_id == cats.id));

    let emiles = pets
        .list(&PetQuery {
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
    let by_id = pets
        .list(&PetQuery {
            ids: picked,
            ..PetQuery::default()
        })
        .must("filter by id");
    assert_eq!(by_id.items, vec![created[3].clone(), created[17].clone()]);

    inventory
        .set_stock(OPERATOR, created[0].id, Stock::ZERO, Always)
        .must("sell out pet 0");
    let sold = pets
        .list(&PetQuery {
            status: Some(PetStatus::Sold),
            ..PetQuery::default()
        })
        .must("filter by status");
    assert_eq!(
        sold.items.iter().map(|p| p.id).collect::<Vec<_>>(),
        vec![created[0].id]
    );
    let sold_stock = inventory
        .list(&InventoryQuery {
            status: Some(PetStatus::Sold),
            ..InventoryQuery::default()
        })
        .must("inventory by status");
    assert_eq!(sold_stock.items.len(), 1);
    let after = inventory
        .list(&InventoryQuery {
            after: Some(created[19].id),
            ..InventoryQuery::default()
        })
        .must("inventory after");
    assert_eq!(after.items.len(), 5);
    assert_eq!(after.next_after, None);

    let categories = f
        .shop
        .categories()
        .list(&CategoryQuery {
            limit: PageSize::new(1).must("size"),
            after: None,
        })
        .must("categories");
    assert_eq!(categories.items.len(), 1);
    assert_eq!(categories.next_after, Some(f.dogs.get()));
}

/// A conditional change applies only while its condition holds for the current state; a
/// refused one changes nothing and records nothing.
pub fn conditional_changes_apply_only_to_the_state_they_expect<S: Store>(store: S) {
    use crate::EventType::{InventoryUpdated, OrderPlaced, PetUpdated};
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 2);
    let events = f.event_count();
    let stale = rex.clone();
    let pets = f.shop.pets();
    let renamed = pets
        .replace(
            OPERATOR,
            rex.id,
            NewPet::new(name("Rex II"), f.dogs),
            |now: &Pet| *now == rex,
        )
        .must("the pet is as read");
    let refused = pets.replace(
        OPERATOR,
        rex.id,
        NewPet::new(name("Rex III"), f.dogs),
        |now: &Pet| *now == stale,
    );
    assert_eq!(
        refused.err(),
        Some(DomainError::PreconditionFailed(Resource::Pet))
    );
    assert_eq!(pets.get(rex.id).must("read"), renamed);

    let inventory = f.shop.inventory();
    let item = inventory.get(rex.id).must("read stock");
    let refused = inventory.set_stock(OPERATOR, rex.id, Stock::ZERO, |now: &InventoryItem| {
        now.quantity.get() == 99
    });
    assert_eq!(code(refused), "precondition_failed");
    inventory
        .set_stock(
            OPERATOR,
            rex.id,
            Stock::from_level(5),
            |now: &InventoryItem| *now == item,
        )
        .must("as read");

    let order = f.order(rex.id, 1).must("order");
    assert_eq!(
        code(
            f.shop
                .orders()
                .cancel(OPERATOR, order.id, |_: &Order| false)
        ),
        "precondition_failed"
    );
    assert_eq!(
        code(
            f.shop
                .categories()
                .delete(OPERATOR, f.dogs, |_: &Category| false)
        ),
        "precondition_failed"
    );
    assert_eq!(f.state_of(rex.id), (PetStatus::Available, 4));
    assert_eq!(
        f.event_types_after(events),
        vec![PetUpdated, InventoryUpdated, OrderPlaced, InventoryUpdated],
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
                        f.shop
                            .pets()
                            .replace(OPERATOR, pet.id, new, |now: &Pet| now == pet)
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
            &f.shop.pets().get(pet.id).must("read"),
            winners[0],
            "the winner's state stays"
        );
    }
}

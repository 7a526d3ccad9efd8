//! Prices: a pet's own resource, in the shop's currency, changed only through it.

use super::*;
use crate::{Amount, EventType, PetPrice, PetQuery, Price, Resource};

fn amount(minor_units: i64) -> Amount {
    Amount::new(minor_units).must("a valid amount")
}

/// A price is set, read (on its own and on the pet, in lists too) and removed, each change a
/// `pet.updated`; setting the same amount again changes nothing, and only staff change it.
pub fn a_price_is_set_read_and_removed_in_the_shops_currency<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 1);
    let prices = f.shop.prices();
    let not_found = DomainError::NotFound {
        resource: Resource::Price,
        id: rex.id.get(),
    };
    assert_eq!(prices.get(rex.id).err(), Some(not_found.clone()));
    assert_eq!(rex.price, None, "a new pet has no price");

    let events = f.event_count();
    let set = prices
        .set(OPERATOR, rex.id, amount(1999), Always)
        .must("set a price");
    let price = Price {
        amount: amount(1999),
        currency: f.shop.currency(),
    };
    assert_eq!(set, PetPrice::of(rex.id, price));
    assert_eq!(prices.get(rex.id).must("read the price"), set);
    assert_eq!(f.shop.pets().get(rex.id).must("read").price, Some(price));
    let listed = f
        .shop
        .pets()
        .list(&PetQuery::new(None, None, None, vec![rex.id]).must("a query"))
        .must("list");
    assert_eq!(listed.items[0].price, Some(price), "lists show prices too");
    assert_eq!(f.event_types_after(events), [EventType::PetUpdated]);

    prices
        .set(OPERATOR, rex.id, amount(1999), Always)
        .must("the same price again");
    assert_eq!(f.event_count(), events + 1, "the same amount is no change");
    assert_eq!(
        code(prices.set(customer(7), rex.id, amount(1), Always)),
        "forbidden"
    );
    prices
        .set(staff(8), rex.id, amount(0), Always)
        .must("staff give a pet away");
    assert_eq!(prices.get(rex.id).must("read").amount, amount(0));

    prices.remove(OPERATOR, rex.id, Always).must("remove");
    assert_eq!(prices.get(rex.id).err(), Some(not_found.clone()));
    assert_eq!(f.shop.pets().get(rex.id).must("read").price, None);
    assert_eq!(
        prices.remove(OPERATOR, rex.id, Always).err(),
        Some(not_found)
    );
    assert_eq!(
        f.event_types_after(events),
        [EventType::PetUpdated; 3],
        "set, changed, removed"
    );

    let ghost = PetId::new(rex.id.get() + 100).must("an id");
    assert_eq!(
        prices.set(OPERATOR, ghost, amount(5), Always).err(),
        Some(DomainError::NotFound {
            resource: Resource::Pet,
            id: ghost.get()
        })
    );
}

/// Replacing a pet, or a rule changing its status, never touches its price: a client that
/// knows nothing of prices cannot clear one.
pub fn a_pet_keeps_its_price_when_replaced_or_its_status_moves<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 1);
    let price = f
        .shop
        .prices()
        .set(OPERATOR, rex.id, amount(2500), Always)
        .must("set a price");
    let replaced = f
        .shop
        .pets()
        .replace(
            OPERATOR,
            rex.id,
            NewPet::new(name("Rex II"), f.dogs),
            Always,
        )
        .must("replace");
    let kept = Some(Price {
        amount: price.amount,
        currency: price.currency,
    });
    assert_eq!(replaced.price, kept, "the answer shows the price kept");
    assert_eq!(f.shop.pets().get(rex.id).must("read").price, kept);

    f.order(rex.id, 1).must("order the last unit");
    let pending = f.shop.pets().get(rex.id).must("read");
    assert_eq!(pending.status, PetStatus::Pending);
    assert_eq!(
        pending.price, kept,
        "a status moved by a rule keeps the price"
    );
}

/// A price change with a condition applies only to the price it expects (`None`: none), and
/// a refused one changes nothing.
pub fn price_changes_apply_only_to_the_price_they_expect<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 0);
    let prices = f.shop.prices();
    let refused = prices.set(OPERATOR, rex.id, amount(100), |now: &Option<PetPrice>| {
        now.is_some()
    });
    assert_eq!(
        refused.err(),
        Some(DomainError::PreconditionFailed(Resource::Price))
    );
    assert!(prices.get(rex.id).is_err(), "a refused set sets nothing");
    let first = prices
        .set(OPERATOR, rex.id, amount(100), |now: &Option<PetPrice>| {
            now.is_none()
        })
        .must("set where none is");
    let events = f.event_count();
    let stale = Some(PetPrice {
        amount: amount(99),
        ..first
    });
    assert_eq!(
        code(
            prices.set(OPERATOR, rex.id, amount(200), |now: &Option<PetPrice>| {
                *now == stale
            })
        ),
        "precondition_failed"
    );
    assert_eq!(
        code(prices.remove(OPERATOR, rex.id, |now: &Option<PetPrice>| { *now == stale })),
        "precondition_failed"
    );
    assert_eq!(prices.get(rex.id).must("read"), first);
    assert_eq!(f.event_count(), events, "refusals record nothing");
    prices
        .set(OPERATOR, rex.id, amount(200), |now: &Option<PetPrice>| {
            *now == Some(first)
        })
        .must("set as read");
    assert_eq!(prices.get(rex.id).must("read").amount, amount(200));
}

/// An order keeps, on its line, the price its pet had when it was placed: a later change or
/// removal of the price leaves it as it was; an unpriced pet's order has no amounts.
pub fn an_order_keeps_the_price_its_pet_had_when_placed<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 5);
    let prices = f.shop.prices();
    prices
        .set(OPERATOR, rex.id, amount(250), Always)
        .must("set a price");
    let priced = f.order(rex.id, 3).must("order three");
    let line = &priced.lines[0];
    assert_eq!(priced.lines.len(), 1);
    assert_eq!(
        (line.line_no, line.pet_id, line.quantity),
        (1, rex.id, qty(3))
    );
    assert_eq!(line.unit_amount, Some(amount(250)));
    assert_eq!(line.amount.map(|total| total.get()), Some(750));
    assert_eq!(
        priced.total_amount, line.amount,
        "the total is the sum of the lines"
    );
    assert_eq!(priced.currency, Some(f.shop.currency()));

    prices
        .set(OPERATOR, rex.id, amount(300), Always)
        .must("change the price");
    let read = f.shop.orders().get(OPERATOR, priced.id).must("read");
    assert_eq!(read, priced, "a later price leaves the order as placed");
    prices
        .remove(OPERATOR, rex.id, Always)
        .must("remove the price");
    let unpriced = f.order(rex.id, 1).must("order an unpriced pet");
    assert_eq!(unpriced.lines[0].unit_amount, None);
    assert_eq!((unpriced.currency, unpriced.total_amount), (None, None));
    let listed = f
        .shop
        .orders()
        .list(OPERATOR, &crate::OrderQuery::default())
        .must("list");
    assert_eq!(listed.items, [priced.clone(), unpriced]);

    let completed = f.complete(priced.id);
    assert_eq!(
        (completed.lines, completed.total_amount),
        (priced.lines, priced.total_amount),
        "completing keeps the amounts"
    );
}

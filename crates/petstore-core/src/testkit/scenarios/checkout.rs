//! Checkouts: one order of several lines, all or nothing, each line keeping its pet's price,
//! every refused line named; completing and cancelling act on every line.

use super::*;
use crate::{
    Amount, CheckoutLines, IdempotencyKey, Idempotent, LineRefusal, MovementKind, MovementQuery,
    NewCheckout, NewLine, OrderPatch, OrderQuery, Outcome, Total,
};

/// A pet in Dogs with `stock` units, priced at `amount` minor units.
pub(super) fn priced<S: Store>(f: &Fixture<S>, pet_name: &str, stock: u32, amount: i64) -> Pet {
    let pet = f.pet_with_stock(pet_name, stock);
    f.shop
        .prices()
        .set(
            OPERATOR,
            pet.id,
            Amount::new(amount).must("an amount"),
            Always,
        )
        .must("price the pet");
    pet
}

/// The lines of a checkout or a hold: (pet, units) each.
pub(super) fn lines_of(lines: &[(PetId, i64)]) -> CheckoutLines {
    let lines = lines
        .iter()
        .map(|&(pet_id, units)| NewLine {
            pet_id,
            quantity: qty(units),
        })
        .collect();
    CheckoutLines::new(lines).must("valid lines")
}

fn checkout(lines: &[(PetId, i64)], expected_total: Option<i64>) -> NewCheckout {
    NewCheckout {
        lines: lines_of(lines),
        ship_date: None,
        expected_total: expected_total.map(|t| Total::new(t).must("a total")),
    }
}

fn stock_of<S: Store>(f: &Fixture<S>, pet: PetId) -> u32 {
    f.shop.inventory().get(pet).must("stock").quantity.get()
}

/// A checkout of three lines places one order: each line with its pet's price and amount, the
/// order with their total; every pet's units leave stock, one ledger movement per line naming
/// the order and its line; listing orders by any line's pet finds it.
pub fn a_checkout_places_every_line_at_its_price_in_one_order<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = priced(&f, "Rex", 5, 1999);
    let fido = priced(&f, "Fido", 2, 500);
    let kitty = priced(&f, "Kitty", 1, 0);
    let placed = f
        .shop
        .orders()
        .checkout(
            OPERATOR,
            checkout(&[(fido.id, 2), (rex.id, 3), (kitty.id, 1)], Some(6997)),
            None,
        )
        .made("check out");
    assert_eq!(
        (placed.pet_id, placed.quantity),
        (fido.id, qty(2)),
        "line 1's"
    );
    let amounts: Vec<_> = placed
        .lines
        .iter()
        .map(|l| {
            (
                l.line_no,
                l.pet_id,
                l.unit_amount.map(Amount::get),
                l.amount.map(Total::get),
            )
        })
        .collect();
    assert_eq!(
        amounts,
        [
            (1, fido.id, Some(500), Some(1000)),
            (2, rex.id, Some(1999), Some(5997)),
            (3, kitty.id, Some(0), Some(0)),
        ]
    );
    assert_eq!(placed.total_amount.map(Total::get), Some(6997));
    assert_eq!(placed.currency, Some(f.shop.currency()));
    assert_eq!(
        f.shop.orders().get(OPERATOR, placed.id).must("read"),
        placed
    );
    assert_eq!(
        [
            stock_of(&f, rex.id),
            stock_of(&f, fido.id),
            stock_of(&f, kitty.id)
        ],
        [2, 0, 0]
    );
    let committed = |pet| f.shop.inventory().get(pet).must("stock").committed.get();
    assert_eq!(
        [committed(rex.id), committed(fido.id), committed(kitty.id)],
        [3, 2, 1],
        "every line's units are committed to its order"
    );
    assert_eq!(
        f.shop.pets().get(fido.id).must("read").status,
        PetStatus::Pending
    );
    for pet in [rex.id, fido.id, kitty.id] {
        let listed = f
            .shop
            .orders()
            .list(
                OPERATOR,
                &OrderQuery {
                    pet_id: Some(pet),
                    ..OrderQuery::default()
                },
            )
            .must("list by pet");
        assert_eq!(listed.items, std::slice::from_ref(&placed), "pet {pet}");
        let moved = f
            .shop
            .inventory()
            .movements(
                OPERATOR,
                &MovementQuery {
                    pet_id: pet,
                    after: None,
                    limit: PageSize::MAX_PAGE,
                },
            )
            .must("movements");
        let last = moved.items.last().must("a movement");
        assert_eq!(last.kind, MovementKind::Committed);
        assert_eq!(last.order_id, Some(placed.id));
        let line = placed
            .lines
            .iter()
            .find(|l| l.pet_id == pet)
            .must("its line");
        assert_eq!(last.line_no, Some(u32::from(line.line_no)));
    }
}

/// A checkout with any line refused places nothing, changes no stock and records nothing, and
/// names every refused line; a stale `expectedTotal` is refused with the total; an unpriced
/// pet is `price_missing`.
pub fn a_refused_checkout_names_every_line_and_changes_nothing<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = priced(&f, "Rex", 1, 100);
    let fido = priced(&f, "Fido", 5, 200);
    let kitty = priced(&f, "Kitty", 0, 300);
    let plain = f.pet_with_stock("Plain", 4);
    let events = f.event_count();
    let orders = f.shop.orders();
    let refused = orders
        .checkout(
            OPERATOR,
            checkout(&[(rex.id, 2), (fido.id, 1), (kitty.id, 1)], None),
            None,
        )
        .err();
    let Some(DomainError::CheckoutRefused { lines }) = refused else {
        panic!("a refusal naming lines: {refused:?}");
    };
    let named: Vec<(u16, &str)> = lines
        .iter()
        .map(|LineRefusal { line_no, error }| (*line_no, error.code()))
        .collect();
    assert_eq!(
        named,
        [(1, "insufficient_stock"), (3, "insufficient_stock")]
    );
    assert_eq!(lines[0].field(), "lines/0/quantity");

    let gone = PetId::new(999).must("an id");
    let refused = orders.checkout(
        OPERATOR,
        checkout(&[(fido.id, 1), (gone, 1), (plain.id, 1)], None),
        None,
    );
    assert_eq!(
        code(refused),
        "unknown_pet",
        "the most telling line decides the code"
    );
    let refused = orders.checkout(OPERATOR, checkout(&[(plain.id, 1)], None), None);
    assert_eq!(code(refused), "price_missing");
    let refused = orders.checkout(OPERATOR, checkout(&[(fido.id, 2)], Some(399)), None);
    assert_eq!(
        refused.err(),
        Some(DomainError::TotalMismatch {
            expected: Total::new(399).must("a total"),
            total: Total::new(400).must("a total"),
        })
    );
    assert_eq!(f.event_count(), events, "nothing recorded");
    assert_eq!([stock_of(&f, rex.id), stock_of(&f, fido.id)], [1, 5]);
    let all = orders.list(OPERATOR, &OrderQuery::default()).must("list");
    assert!(all.items.is_empty(), "{:?}", all.items);
}

/// Completing a checkout's order sells every line; cancelling another gives every line's
/// units back; each line has its own movement.
pub fn completing_and_cancelling_a_checkout_act_on_every_line<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = priced(&f, "Rex", 3, 100);
    let fido = priced(&f, "Fido", 3, 200);
    let orders = f.shop.orders();
    let first = orders
        .checkout(OPERATOR, checkout(&[(rex.id, 1), (fido.id, 3)], None), None)
        .made("check out");
    let second = orders
        .checkout(OPERATOR, checkout(&[(fido.id, 1), (rex.id, 3)], None), None)
        .err();
    assert_eq!(second.map(|e| e.code()), Some("insufficient_stock"));
    let second = orders
        .checkout(OPERATOR, checkout(&[(rex.id, 2)], None), None)
        .made("check out again");
    let complete = OrderPatch {
        complete: Some(true),
        ..OrderPatch::default()
    };
    orders
        .update(OPERATOR, first.id, complete, Always)
        .must("complete");
    assert_eq!(
        f.shop.pets().get(fido.id).must("read").status,
        PetStatus::Sold
    );
    orders.cancel(OPERATOR, second.id, Always).must("cancel");
    assert_eq!(stock_of(&f, rex.id), 2);
    assert_eq!(
        f.shop.pets().get(rex.id).must("read").status,
        PetStatus::Available
    );
    f.shop
        .pets()
        .delete(OPERATOR, fido.id, Always)
        .must("a sold pet with no open order goes");
}

/// The same checkout sent again under its idempotency key answers the first order and places
/// nothing more.
pub fn a_checkout_is_placed_once_per_idempotency_key<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = priced(&f, "Rex", 5, 100);
    let fido = priced(&f, "Fido", 5, 100);
    let shopper = customer(4);
    let body = checkout(&[(rex.id, 1), (fido.id, 1)], Some(200));
    let key = IdempotencyKey::new("basket-1", "POST", "/v1/store/checkout", b"basket").must("key");
    let once = || Idempotent {
        key: key.clone(),
        record: &|order: &Order| order.id.get().to_string().into_bytes(),
    };
    let first = f
        .shop
        .orders()
        .checkout(shopper, body.clone(), Some(once()))
        .must("check out");
    let again = f
        .shop
        .orders()
        .checkout(shopper, body, Some(once()))
        .must("again");
    let Outcome::Done(order) = first else {
        panic!("the first is placed: {first:?}");
    };
    assert_eq!(
        again,
        Outcome::Replayed(order.id.get().to_string().into_bytes())
    );
    assert_eq!([stock_of(&f, rex.id), stock_of(&f, fido.id)], [4, 4]);
}

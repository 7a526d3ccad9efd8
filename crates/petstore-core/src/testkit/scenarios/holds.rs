//! Holds: units set aside at once, all or nothing; each hold ends exactly once, by a release,
//! by its expiry (ended by the sweeper, with its movements and events) or by a checkout that
//! orders its units; a hold past its expiry can be neither checked out nor released.

use std::sync::Barrier;

use chrono::Duration;

use super::checkout::{lines_of, priced};
use super::*;
use crate::{
    HoldCheckout, HoldEnd, HoldId, IdempotencyKey, Idempotent, Movement, MovementKind,
    MovementQuery, NewHold, Outcome,
};

/// A hold of `lines` (pet, units) living `seconds`, as `caller`.
fn hold_as<S: Store>(
    f: &Fixture<S>,
    caller: Caller,
    lines: &[(PetId, i64)],
    seconds: u32,
) -> Result<crate::Hold, DomainError> {
    let new = NewHold {
        lines: lines_of(lines),
        ttl_seconds: Some(seconds),
    };
    f.shop.holds().place(caller, new, None).map(|outcome| {
        outcome
            .done()
            .unwrap_or_else(|| panic!("a hold without a key is placed"))
    })
}

/// The movements of `pet` that belong to `hold`.
fn movements_of<S: Store>(f: &Fixture<S>, pet: PetId, hold: HoldId) -> Vec<Movement> {
    let query = MovementQuery {
        pet_id: pet,
        after: None,
        limit: PageSize::new(100).must("size"),
    };
    let page = f
        .shop
        .inventory()
        .movements(OPERATOR, &query)
        .must("movements");
    page.items
        .into_iter()
        .filter(|m| m.hold_id == Some(hold))
        .collect()
}

fn held_of<S: Store>(f: &Fixture<S>, pet: PetId) -> (u32, u32, u32) {
    let item = f.shop.inventory().get(pet).must("inventory");
    (item.quantity.get(), item.held.get(), item.committed.get())
}

/// A hold takes its units out of `available` at once (`held`), with a movement per line and a
/// `hold.placed` event; releasing it gives them back, once: a second release is refused.
pub fn a_hold_sets_units_aside_until_it_is_released<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 5);
    let fido = f.pet_with_stock("Fido", 1);
    let before = f.event_count();
    let hold = hold_as(&f, OPERATOR, &[(rex.id, 2), (fido.id, 1)], 60).must("hold");
    assert_eq!(hold.expires_at, start_time() + Duration::seconds(60));
    assert_eq!(hold.lines.len(), 2);
    assert_eq!(held_of(&f, rex.id), (3, 2, 0));
    assert_eq!(
        f.state_of(fido.id),
        (PetStatus::Pending, 0),
        "its last unit is held"
    );
    assert_eq!(f.event_types_after(before)[0], EventType::HoldPlaced);
    let placed = movements_of(&f, rex.id, hold.id);
    assert_eq!(placed.len(), 1);
    assert_eq!(
        (placed[0].kind, placed[0].held_after.get()),
        (MovementKind::Held, 2)
    );

    let released = f.shop.holds().release(OPERATOR, hold.id).must("release");
    assert_eq!(released.id, hold.id);
    assert_eq!(held_of(&f, rex.id), (5, 0, 0));
    assert_eq!(f.state_of(fido.id), (PetStatus::Available, 1));
    let read = f.shop.holds().get(OPERATOR, hold.id).must("read");
    assert_eq!(read.ended.map(|e| e.how), Some(HoldEnd::Released));
    assert_eq!(
        code(f.shop.holds().release(OPERATOR, hold.id)),
        "hold_ended"
    );
    let kinds: Vec<_> = movements_of(&f, fido.id, hold.id)
        .iter()
        .map(|m| m.kind)
        .collect();
    assert_eq!(kinds, [MovementKind::Held, MovementKind::HoldReleased]);
}

/// A hold is all or nothing: a short line refuses it, naming the line, and nothing is held.
pub fn a_refused_hold_names_its_lines_and_holds_nothing<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 5);
    let fido = f.pet_with_stock("Fido", 1);
    let before = f.event_count();
    let refused = hold_as(&f, OPERATOR, &[(rex.id, 2), (fido.id, 2)], 60);
    match refused {
        Err(DomainError::CheckoutRefused { lines }) => {
            assert_eq!(lines.len(), 1);
            assert_eq!(lines[0].line_no, 2);
        }
        other => panic!("a short line refuses the hold: {other:?}"),
    }
    assert_eq!(held_of(&f, rex.id), (5, 0, 0));
    assert_eq!(f.event_count(), before);
}

/// Checking a hold out places one order of its lines at the pets' prices: the units move from
/// `held` to `committed`, `available` does not move, the hold is consumed and names the
/// order; it becomes no second order, whatever the key.
pub fn a_checked_out_hold_becomes_one_order<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = priced(&f, "Rex", 5, 250);
    let fido = priced(&f, "Fido", 2, 1000);
    let shopper = customer(7);
    let hold = hold_as(&f, shopper, &[(rex.id, 2), (fido.id, 1)], 60).must("hold");
    let key = |k: &str| Idempotent {
        key: IdempotencyKey::new(k, "POST", "/v1/store/holds/1/checkout", b"{}").must("key"),
        record: &|order: &Order| order.id.get().to_string().into_bytes(),
    };
    let placed = f
        .shop
        .holds()
        .check_out(
            shopper,
            hold.id,
            HoldCheckout::default(),
            Some(key("pay-1")),
        )
        .must("check out");
    let Outcome::Done(order) = placed else {
        panic!("the first checkout places the order: {placed:?}");
    };
    let lines: Vec<_> = order
        .lines
        .iter()
        .map(|l| (l.line_no, l.pet_id, l.quantity.get()))
        .collect();
    assert_eq!(lines, [(1, rex.id, 2), (2, fido.id, 1)]);
    assert_eq!(order.total_amount.map(|t| t.get()), Some(1500));
    assert_eq!(held_of(&f, rex.id), (3, 0, 2));
    // Line 2 is counted too, though no stock changed for it.
    assert_eq!(held_of(&f, fido.id), (1, 0, 1));
    let consumed = f.shop.holds().get(shopper, hold.id).must("read");
    let ending = consumed.ended.unwrap_or_else(|| panic!("the hold ended"));
    assert_eq!(
        (ending.how, ending.order_id),
        (HoldEnd::Consumed, Some(order.id))
    );
    let moved = movements_of(&f, rex.id, hold.id);
    assert_eq!(moved.len(), 2);
    assert_eq!(moved[1].kind, MovementKind::HoldCommitted);
    assert_eq!(
        (moved[1].order_id, moved[1].line_no),
        (Some(order.id), Some(1))
    );

    let again = f.shop.holds().check_out(
        shopper,
        hold.id,
        HoldCheckout::default(),
        Some(key("pay-2")),
    );
    assert_eq!(code(again), "hold_ended");
    assert_eq!(held_of(&f, rex.id), (3, 0, 2));
}

/// Once its expiry has come, a hold can be neither checked out nor released, and refusing
/// records nothing; the sweeper ends it, once, with its movements and `hold.expired`, and
/// its units are back.
pub fn a_hold_past_its_expiry_is_ended_by_the_sweeper_once<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = priced(&f, "Rex", 2, 100);
    let hold = hold_as(&f, OPERATOR, &[(rex.id, 2)], 30).must("hold");
    assert_eq!(f.shop.holds().expire_due(10).must("sweep early"), 0);
    f.clock.advance(Duration::seconds(30));
    let before = f.event_count();
    let late = f
        .shop
        .holds()
        .check_out(OPERATOR, hold.id, HoldCheckout::default(), None);
    assert_eq!(code(late), "hold_expired");
    assert_eq!(
        code(f.shop.holds().release(OPERATOR, hold.id)),
        "hold_expired"
    );
    assert_eq!(f.event_count(), before, "a refusal records nothing");
    assert_eq!(f.state_of(rex.id), (PetStatus::Pending, 0));

    assert_eq!(f.shop.holds().expire_due(10).must("sweep"), 1);
    assert_eq!(f.shop.holds().expire_due(10).must("sweep again"), 0);
    assert_eq!(f.state_of(rex.id), (PetStatus::Available, 2));
    let ended = f.shop.holds().get(OPERATOR, hold.id).must("read");
    assert_eq!(ended.ended.map(|e| e.how), Some(HoldEnd::Expired));
    assert_eq!(f.event_types_after(before)[0], EventType::HoldExpired);
    let kinds: Vec<_> = movements_of(&f, rex.id, hold.id)
        .iter()
        .map(|m| m.kind)
        .collect();
    assert_eq!(kinds, [MovementKind::Held, MovementKind::HoldExpired]);
    assert_eq!(f.shop.holds().totals().must("totals").holds, 0);
}

/// Staff see the active holds about to expire, the soonest first, those already due
/// included and none ended or further off; a customer may not.
pub fn staff_see_the_holds_about_to_expire<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 10);
    let later = hold_as(&f, OPERATOR, &[(rex.id, 1)], 600).must("in ten minutes");
    let soon = hold_as(&f, OPERATOR, &[(rex.id, 2)], 120).must("in two minutes");
    let sooner = hold_as(&f, OPERATOR, &[(rex.id, 3)], 60).must("in a minute");
    let released = hold_as(&f, OPERATOR, &[(rex.id, 1)], 30).must("released");
    f.shop
        .holds()
        .release(OPERATOR, released.id)
        .must("release");
    let ids = |within: i64, limit: u32| -> Vec<HoldId> {
        f.shop
            .holds()
            .expiring(staff(3), Duration::seconds(within), limit)
            .must("expiring")
            .iter()
            .map(|hold| hold.id)
            .collect()
    };
    assert_eq!(ids(300, 10), [sooner.id, soon.id]);
    assert_eq!(ids(300, 1), [sooner.id]);
    assert_eq!(ids(0, 10), Vec::<HoldId>::new());
    let expiring = f
        .shop
        .holds()
        .expiring(staff(3), Duration::seconds(300), 10)
        .must("expiring");
    assert_eq!(expiring[1], soon, "each hold whole, as read alone");
    // Past its expiry and not yet swept, it is still to come back: listed first.
    f.clock.advance(Duration::seconds(90));
    assert_eq!(ids(60, 10), [sooner.id, soon.id]);
    assert_eq!(ids(600, 10), [sooner.id, soon.id, later.id]);
    assert_eq!(
        code(
            f.shop
                .holds()
                .expiring(customer(1), Duration::seconds(300), 10)
        ),
        "forbidden"
    );
}

/// A customer sees, releases and checks out only its own holds; staff see every hold; a pet
/// with units held cannot be deleted.
pub fn customers_see_only_their_own_holds<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 5);
    let (alice, bob) = (customer(1), customer(2));
    let hers = hold_as(&f, alice, &[(rex.id, 1)], 60).must("alice holds");
    assert_eq!(f.shop.holds().get(alice, hers.id).must("hers"), hers);
    assert_eq!(code(f.shop.holds().get(bob, hers.id)), "not_found");
    assert_eq!(code(f.shop.holds().release(bob, hers.id)), "not_found");
    assert_eq!(
        f.shop.holds().get(staff(3), hers.id).must("staff read"),
        hers
    );
    assert_eq!(
        code(f.shop.pets().delete(OPERATOR, rex.id, Always)),
        "pet_has_open_orders"
    );
    let totals = f.shop.holds().totals().must("totals");
    assert_eq!((totals.holds, totals.units), (1, 1));
}

/// Placing a hold with an idempotency key places it once: the retry is answered as the first.
pub fn a_hold_is_placed_once_per_idempotency_key<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 5);
    let shopper = customer(4);
    let key = IdempotencyKey::new("basket-9", "POST", "/v1/store/holds", b"basket").must("key");
    let once = || Idempotent {
        key: key.clone(),
        record: &|hold: &crate::Hold| hold.id.get().to_string().into_bytes(),
    };
    let new = || NewHold {
        lines: lines_of(&[(rex.id, 2)]),
        ttl_seconds: None,
    };
    let first = f
        .shop
        .holds()
        .place(shopper, new(), Some(once()))
        .must("hold");
    let again = f
        .shop
        .holds()
        .place(shopper, new(), Some(once()))
        .must("again");
    let Outcome::Done(hold) = first else {
        panic!("the first is placed: {first:?}");
    };
    assert_eq!(
        hold.expires_at,
        start_time() + Duration::seconds(600),
        "the default life"
    );
    assert_eq!(
        again,
        Outcome::Replayed(hold.id.get().to_string().into_bytes())
    );
    assert_eq!(held_of(&f, rex.id), (3, 2, 0));
}

/// Sweepers racing over the same due holds end each once: every hold has one ending, one
/// movement per line for it, and the units are all back.
pub fn racing_sweepers_end_each_hold_once<S: Store + Sync>(store: S) {
    const HOLDS: usize = 6;
    const SWEEPERS: usize = 4;
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 20);
    let fido = f.pet_with_stock("Fido", 20);
    let holds: Vec<_> = (0..HOLDS)
        .map(|_| hold_as(&f, OPERATOR, &[(fido.id, 1), (rex.id, 2)], 5).must("hold"))
        .collect();
    f.clock.advance(Duration::seconds(5));
    let start = Barrier::new(SWEEPERS);
    let ended: usize = std::thread::scope(|scope| {
        let sweepers: Vec<_> = (0..SWEEPERS)
            .map(|_| {
                scope.spawn(|| {
                    start.wait();
                    f.shop.holds().expire_due(100)
                })
            })
            .collect();
        sweepers
            .into_iter()
            .map(|s| s.join().unwrap_or_else(|_| panic!("a sweeper panicked")))
            .map(|ended| ended.must("sweep"))
            .sum()
    });
    assert_eq!(ended, HOLDS, "each hold is ended by one sweeper");
    for hold in &holds {
        let kinds: Vec<_> = movements_of(&f, rex.id, hold.id)
            .iter()
            .map(|m| m.kind)
            .collect();
        assert_eq!(kinds, [MovementKind::Held, MovementKind::HoldExpired]);
    }
    assert_eq!(held_of(&f, rex.id), (20, 0, 0));
    assert_eq!(held_of(&f, fido.id), (20, 0, 0));
}

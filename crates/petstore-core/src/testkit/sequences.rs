//! Property tests over random sequences of operations.
//!
//! Each case runs up to 40 random operations (create a pet, priced or not, set and adjust
//! stock, place orders and check out several lines, complete and cancel orders, delete a pet,
//! staff status changes, place, release and check out holds, let time pass on the injected
//! clock, sweep expired holds) on a fresh store, some of them bound to be refused, and checks
//! after every step:
//!
//! - **conservation**: for every pet, stock, plus units held, plus units in open and in
//!   complete orders' lines, plus units removed by stock updates, equals units added by stock
//!   updates; so stock never goes below zero and nothing is sold that was not in stock;
//! - **holds**: each ends at most once, by one of release, expiry or checkout, with its
//!   movements; none is checked out after its expiry or outlives a sweep
//!   (`sequences/holds.rs`);
//! - **finality**: a complete order stays stored and complete;
//! - **status**: for pets whose status staff never set by hand, `pending` means no stock and
//!   open orders or held units, `sold` means no stock, no open order and nothing held, and an
//!   `available` pet without stock has neither;
//! - **atomicity**: a refused operation changes nothing and records no event; no operation
//!   fails for a reason other than a rule;
//! - **the ledger**: each pet's movements fit their kinds, never go negative, and add up to
//!   its stock, its held units and its open orders' units (`sequences/ledger.rs`);
//! - **events**: ids strictly increase.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use super::scenarios::{Fixture, OPERATOR, name};
use super::{Must, all_pages};
use crate::{
    Adjustment, AdjustmentUnits, Always, Amount, CategoryQuery, CheckoutLines, Clock, DomainError,
    Hold, HoldId, InventoryItem, InventoryQuery, Movement, NewCheckout, NewLine, NewPet, Order,
    OrderId, OrderPatch, OrderQuery, PageSize, Pet, PetId, PetQuery, Quantity, Reason, Stock,
    Store, ValidationError,
};

mod holds;
mod invariants;
mod ledger;
mod ops;

pub use ops::{Op, op};

/// Runs `cases` random sequences, each on a fresh store from `make`, and panics with the
/// smallest failing sequence if an invariant breaks.
pub fn check<S: Store>(make: impl Fn() -> S, cases: u32) {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&prop::collection::vec(op(), 1..40), |ops| {
        run_sequence(make(), &ops)
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
}

/// Everything the service shows, read through its list operations.
#[derive(Debug, Clone, PartialEq)]
struct World {
    pets: Vec<Pet>,
    inventory: Vec<InventoryItem>,
    orders: Vec<Order>,
    /// Every hold placed, active or ended.
    holds: Vec<Hold>,
    categories: usize,
    events: usize,
    /// Every movement of each pet the test created, deleted ones included.
    ledger: BTreeMap<PetId, Vec<Movement>>,
}

/// What the test knows of one pet: stock added and removed by stock updates, and whether
/// staff ever set its status by hand.
#[derive(Debug, Default)]
struct Ledger {
    added: u64,
    removed: u64,
    status_set_by_hand: bool,
}

fn read_world<S: Store>(f: &Fixture<S>, created: &[PetId], placed: &[HoldId]) -> World {
    // A small page size, so that reading the world exercises paging too.
    let limit = PageSize::new(7).must("page size");
    let (pets, _) = all_pages(|after| {
        let query = PetQuery {
            after,
            limit,
            ..PetQuery::default()
        };
        f.shop.pets().list(&query).must("list pets")
    });
    let (inventory, _) = all_pages(|after| {
        let query = InventoryQuery {
            after,
            limit,
            ..InventoryQuery::default()
        };
        f.shop.inventory().list(&query).must("list inventory")
    });
    let (orders, _) = all_pages(|after| {
        let query = OrderQuery {
            after,
            limit,
            ..OrderQuery::default()
        };
        f.shop.orders().list(OPERATOR, &query).must("list orders")
    });
    let categories = f
        .shop
        .categories()
        .list(&CategoryQuery::default())
        .must("list categories")
        .items
        .len();
    World {
        pets,
        inventory,
        orders,
        holds: holds::read_holds(f, placed),
        categories,
        events: f.event_count(),
        ledger: ledger::read_ledger(f, created),
    }
}

/// The lines of a checkout or a hold: one per unit count, for the pets from `first` on. More
/// lines than pets names a pet twice, which the body itself refuses (`Err`).
fn basket(pets: &[PetId], first: usize, units: &[u32]) -> Result<CheckoutLines, ValidationError> {
    let lines = units
        .iter()
        .zip(first..)
        .map(|(&units, n)| NewLine {
            pet_id: pets[n % pets.len()],
            quantity: Quantity::new(i64::from(units)).must("units"),
        })
        .collect();
    CheckoutLines::new(lines)
}

/// Runs one sequence of `ops` on `store` (a failing case [`check`] printed, say) and reports
/// the first invariant it breaks.
pub fn run_sequence<S: Store>(store: S, ops: &[Op]) -> Result<(), TestCaseError> {
    let f = Fixture::new(store);
    let mut pets: Vec<PetId> = Vec::new();
    let mut orders: Vec<OrderId> = Vec::new();
    let mut ledgers: BTreeMap<PetId, Ledger> = BTreeMap::new();
    let mut completed: BTreeSet<OrderId> = BTreeSet::new();
    let mut placed: Vec<HoldId> = Vec::new();
    let mut world = read_world(&f, &pets, &placed);

    for (step, op) in ops.iter().enumerate() {
        let of_holds = holds::run(&f, op, &pets, &mut placed, &mut orders);
        let pick_pet = |i: usize| pets.get(i % pets.len().max(1)).copied();
        let pick_order = |i: usize| orders.get(i % orders.len().max(1)).copied();
        let outcome: Result<(), DomainError> = match *op {
            Op::CreatePet => f
                .shop
                .pets()
                .create(
                    OPERATOR,
                    NewPet::new(name(&format!("Pet {step}")), f.dogs),
                    None,
                )
                .and_then(|outcome| {
                    let pet = outcome.done().must("a create without a key runs");
                    pets.push(pet.id);
                    ledgers.insert(pet.id, Ledger::default());
                    // Most pets are priced, so checkouts go through; every third is not.
                    if step % 3 == 0 {
                        return Ok(());
                    }
                    let amount =
                        Amount::new(100 * i64::try_from(step).unwrap_or(1) + 1).must("an amount");
                    f.shop
                        .prices()
                        .set(OPERATOR, pet.id, amount, Always)
                        .map(|_| ())
                }),
            Op::SetStock { pet, level } => match pick_pet(pet) {
                None => Ok(()),
                Some(id) => {
                    let old = world
                        .inventory
                        .iter()
                        .find(|i| i.pet_id == id)
                        .map(|i| i.quantity.get());
                    let stock = Stock::from_level(level);
                    f.shop
                        .inventory()
                        .set_stock(OPERATOR, id, stock, Always)
                        .map(|_| {
                            let old = u64::from(old.unwrap_or_default());
                            let ledger = ledgers.entry(id).or_default();
                            ledger.added += u64::from(level).saturating_sub(old);
                            ledger.removed += old.saturating_sub(u64::from(level));
                        })
                }
            },
            Op::Adjust { pet, units, expect } => match pick_pet(pet) {
                None => Ok(()),
                Some(id) => {
                    let old = world
                        .inventory
                        .iter()
                        .find(|i| i.pet_id == id)
                        .map(|i| i.quantity);
                    let adjustment = Adjustment {
                        change: AdjustmentUnits::new(i64::from(units)).must("units"),
                        reason: Reason::parse(&format!("step {step}")).must("reason"),
                        change_from_quantity: old.filter(|_| expect),
                    };
                    f.shop
                        .inventory()
                        .adjust(OPERATOR, id, adjustment, Always)
                        .map(|_| {
                            let ledger = ledgers.entry(id).or_default();
                            match u64::try_from(units) {
                                Ok(added) => ledger.added += added,
                                Err(_) => ledger.removed += u64::from(units.unsigned_abs()),
                            }
                        })
                }
            },
            Op::Checkout { first, ref units } => {
                if pets.is_empty() {
                    Ok(())
                } else {
                    match basket(&pets, first, units) {
                        // More lines than pets: a pet twice, which the body itself refuses.
                        Err(_) => Ok(()),
                        Ok(lines) => f
                            .shop
                            .orders()
                            .checkout(
                                OPERATOR,
                                NewCheckout {
                                    lines,
                                    ship_date: None,
                                    expected_total: None,
                                },
                                None,
                            )
                            .map(|outcome| {
                                let order = outcome.done().must("a checkout without a key");
                                orders.push(order.id);
                            }),
                    }
                }
            }
            Op::Place { pet, units } => match pick_pet(pet) {
                None => Ok(()),
                Some(id) => f
                    .order(id, i64::from(units))
                    .map(|order| orders.push(order.id)),
            },
            Op::Complete { order } => match pick_order(order) {
                None => Ok(()),
                Some(id) => f
                    .shop
                    .orders()
                    .update(
                        OPERATOR,
                        id,
                        OrderPatch {
                            complete: Some(true),
                            ..OrderPatch::default()
                        },
                        Always,
                    )
                    .map(|order| {
                        completed.insert(order.id);
                    }),
            },
            Op::Cancel { order } => match pick_order(order) {
                None => Ok(()),
                Some(id) => f.shop.orders().cancel(OPERATOR, id, Always),
            },
            Op::DeletePet { pet } => match pick_pet(pet) {
                None => Ok(()),
                Some(id) => f.shop.pets().delete(OPERATOR, id, Always).map(|()| {
                    ledgers.remove(&id);
                }),
            },
            Op::SetStatus { pet, status } => match pick_pet(pet) {
                None => Ok(()),
                Some(id) => f
                    .shop
                    .pets()
                    .replace(
                        OPERATOR,
                        id,
                        NewPet::new(name(&format!("Renamed {step}")), f.dogs).with_status(status),
                        Always,
                    )
                    .map(|_| {
                        ledgers.entry(id).or_default().status_set_by_hand = true;
                    }),
            },
            Op::PlaceHold { .. }
            | Op::ReleaseHold { .. }
            | Op::CheckOutHold { .. }
            | Op::Tick { .. }
            | Op::Sweep => of_holds.unwrap_or(Ok(())),
        };

        let now = read_world(&f, &pets, &placed);
        match outcome {
            Err(error) => {
                prop_assert!(
                    !error.is_infrastructure(),
                    "step {step} {op:?} failed in the store: {error}"
                );
                prop_assert_eq!(
                    &now,
                    &world,
                    "step {} {:?} was refused ({}) but changed something",
                    step,
                    op,
                    error
                );
            }
            Ok(()) => invariants::check(&now, &ledgers, &completed, step, op)?,
        }
        let context = format!("after step {step} {op:?}");
        ledger::check_ledger(&now, &context)?;
        holds::check(&now, f.clock.now(), op, &context)?;
        world = now;
    }
    let events = f
        .shop
        .events()
        .after(OPERATOR, None, PageSize::new(100).must("size"))
        .must("events");
    prop_assert!(
        events.windows(2).all(|w| w[0].id < w[1].id),
        "event ids must increase"
    );
    Ok(())
}

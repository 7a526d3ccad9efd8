//! The stock ledger's invariants over a random sequence: each pet's movements, read through
//! the service page by page, add up to its stock, its held units and its open orders' units
//! after every step.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use super::super::scenarios::{Fixture, OPERATOR};
use super::super::{Must, all_pages};
use super::World;
use super::holds::held_units;
use crate::{Movement, MovementQuery, PageSize, PetId, Store};

/// Every movement of each pet in `pets` (deleted ones included), oldest first.
pub(super) fn read_ledger<S: Store>(
    f: &Fixture<S>,
    pets: &[PetId],
) -> BTreeMap<PetId, Vec<Movement>> {
    let limit = PageSize::new(3).must("page size");
    pets.iter()
        .map(|&pet_id| {
            let (movements, _) = all_pages(|after| {
                let query = MovementQuery {
                    pet_id,
                    after,
                    limit,
                };
                f.shop
                    .inventory()
                    .movements(OPERATOR, &query)
                    .must("list movements")
            });
            (pet_id, movements)
        })
        .collect()
}

/// Checks that each pet's ledger never goes negative, that each row's changes fit its kind
/// and lead to the balances it records, and that the balances end where the stock (0 for a
/// pet that is gone), the units of its active holds and the units of its open orders are.
pub(super) fn check_ledger(world: &World, context: &str) -> Result<(), TestCaseError> {
    let held = held_units(&world.holds);
    for (pet, movements) in &world.ledger {
        let (mut available, mut held_now, mut committed) = (0i64, 0i64, 0i64);
        for m in movements {
            prop_assert_eq!(m.pet_id, *pet);
            prop_assert!(
                m.fits_its_kind(),
                "{}: {:?} does not fit its kind",
                context,
                m
            );
            available += m.available_change;
            held_now += m.held_change;
            committed += m.committed_change;
            prop_assert!(
                available >= 0 && held_now >= 0 && committed >= 0,
                "{}: pet {}'s ledger goes negative at movement {}",
                context,
                pet,
                m.id
            );
            prop_assert_eq!(
                (available, held_now, committed),
                (
                    i64::from(m.available_after.get()),
                    i64::from(m.held_after.get()),
                    i64::from(m.committed_after.get())
                ),
                "{}: movement {} records other balances than its ledger's sum",
                context,
                m.id
            );
        }
        prop_assert!(
            movements.windows(2).all(|w| w[0].id < w[1].id),
            "movement ids must increase"
        );
        let stock = world
            .inventory
            .iter()
            .find(|item| item.pet_id == *pet)
            .map_or(0, |item| i64::from(item.quantity.get()));
        let open_units: i64 = world
            .orders
            .iter()
            .filter(|o| !o.complete)
            .flat_map(|o| &o.lines)
            .filter(|l| l.pet_id == *pet)
            .map(|l| i64::from(l.quantity.get()))
            .sum();
        prop_assert_eq!(
            (available, held_now, committed),
            (stock, held.get(pet).copied().unwrap_or(0), open_units),
            "{}: pet {}'s ledger does not add up to its stock, holds and open orders",
            context,
            pet
        );
    }
    Ok(())
}

//! The invariants every successful step keeps: finality, conservation of units, totals, and
//! the status rules (see `sequences.rs`).

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use super::{Ledger, Op, World};
use crate::{OrderId, PetId, PetStatus, Total};

pub(super) fn check(
    world: &World,
    ledgers: &BTreeMap<PetId, Ledger>,
    completed: &BTreeSet<OrderId>,
    step: usize,
    op: &Op,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        world.pets.len(),
        world.inventory.len(),
        "every pet has one inventory entry"
    );
    prop_assert_eq!(world.categories, 1);
    for id in completed {
        let order = world.orders.iter().find(|o| o.id == *id);
        prop_assert!(
            order.is_some_and(|o| o.complete),
            "after step {} {:?}: complete order {} changed",
            step,
            op,
            id
        );
    }
    for order in &world.orders {
        let numbered = order.lines.iter().zip(1u16..).all(|(l, n)| l.line_no == n);
        let first = order.lines.first();
        prop_assert!(
            numbered
                && first.is_some_and(|l| (l.pet_id, l.quantity) == (order.pet_id, order.quantity)),
            "after step {} {:?}: order {} has lines {:?}",
            step,
            op,
            order.id,
            order.lines
        );
        for line in &order.lines {
            let priced = line.unit_amount.map(|unit| unit.times(line.quantity));
            prop_assert_eq!(
                line.amount,
                priced,
                "a line's amount is its unit × quantity"
            );
        }
        let total = order
            .lines
            .iter()
            .map(|l| l.amount)
            .collect::<Option<Vec<Total>>>()
            .and_then(Total::sum);
        prop_assert_eq!(
            order.total_amount,
            total,
            "an order's total is its lines' sum"
        );
    }
    for (pet, item) in world.pets.iter().zip(&world.inventory) {
        prop_assert_eq!(pet.id, item.pet_id);
        prop_assert_eq!(pet.status, item.status);
        let ledger = ledgers.get(&pet.id);
        prop_assert!(ledger.is_some(), "pet {} is unknown to the test", pet.id);
        let Some(ledger) = ledger else { continue };
        let units = |complete: bool| -> u64 {
            world
                .orders
                .iter()
                .filter(|o| o.complete == complete)
                .flat_map(|o| &o.lines)
                .filter(|l| l.pet_id == pet.id)
                .map(|l| u64::from(l.quantity.get()))
                .sum()
        };
        let open_orders = world
            .orders
            .iter()
            .filter(|o| !o.complete && o.lines.iter().any(|l| l.pet_id == pet.id))
            .count();
        let stock = u64::from(item.quantity.get());
        let held = u64::from(item.held.get());
        prop_assert_eq!(
            stock + held + units(false) + units(true) + ledger.removed,
            ledger.added,
            "after step {} {:?}: units of pet {} are not conserved",
            step,
            op,
            pet.id
        );
        if !ledger.status_set_by_hand {
            let promised = open_orders > 0 || held > 0;
            let consistent = match pet.status {
                PetStatus::Pending => stock == 0 && promised,
                PetStatus::Sold => stock == 0 && !promised,
                PetStatus::Available => stock > 0 || !promised,
            };
            prop_assert!(
                consistent,
                "after step {} {:?}: pet {} is {} with stock {}, {} held and {} open orders",
                step,
                op,
                pet.id,
                pet.status,
                stock,
                held,
                open_orders
            );
        }
    }
    Ok(())
}

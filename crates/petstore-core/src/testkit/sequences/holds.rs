//! Holds in a random sequence: placing, releasing and checking out holds, time passing, and
//! the sweeper; and what every step keeps of them: each hold ends at most once, by exactly
//! one of release, expiry or checkout, with one movement per line for its placing and for
//! its ending, and no hold is checked out after its expiry or left active past it by a sweep.

use std::collections::BTreeMap;

use chrono::Duration;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use super::super::Must;
use super::super::scenarios::{Fixture, OPERATOR};
use super::{Op, World};
use crate::{
    DomainError, Hold, HoldCheckout, HoldEnd, HoldId, MovementKind, NewHold, OrderId, PetId, Store,
};

/// The most holds the sweeper ends in one go in these sequences: few, so that a sweep may
/// leave some for the next.
const SWEEP_BATCH: u32 = 2;

/// Runs `op` if it is about holds or time (`None` otherwise), recording the holds and orders
/// it makes in `holds` and `orders`.
pub(super) fn run<S: Store>(
    f: &Fixture<S>,
    op: &Op,
    pets: &[PetId],
    holds: &mut Vec<HoldId>,
    orders: &mut Vec<OrderId>,
) -> Option<Result<(), DomainError>> {
    let pick_hold = |i: usize| holds.get(i % holds.len().max(1)).copied();
    let outcome = match *op {
        Op::PlaceHold {
            first,
            ref units,
            life,
        } if !pets.is_empty() => match super::basket(pets, first, units) {
            Err(_) => Ok(()),
            Ok(lines) => {
                let new = NewHold {
                    lines,
                    ttl_seconds: Some(life),
                };
                f.shop.holds().place(OPERATOR, new, None).map(|outcome| {
                    holds.push(outcome.done().must("a hold without a key").id);
                })
            }
        },
        Op::ReleaseHold { hold } => match pick_hold(hold) {
            None => Ok(()),
            Some(id) => f.shop.holds().release(OPERATOR, id).map(|_| ()),
        },
        Op::CheckOutHold { hold } => match pick_hold(hold) {
            None => Ok(()),
            Some(id) => f
                .shop
                .holds()
                .check_out(OPERATOR, id, HoldCheckout::default(), None)
                .map(|outcome| {
                    orders.push(outcome.done().must("a checkout without a key").id);
                }),
        },
        Op::Tick { seconds } => {
            f.clock.advance(Duration::seconds(i64::from(seconds)));
            Ok(())
        }
        Op::Sweep => loop {
            match f.shop.holds().expire_due(SWEEP_BATCH) {
                Ok(0) => break Ok(()),
                Ok(_) => continue,
                Err(error) => break Err(error),
            }
        },
        Op::PlaceHold { .. } => Ok(()),
        _ => return None,
    };
    Some(outcome)
}

/// Every hold of `ids`, as the operator reads it.
pub(super) fn read_holds<S: Store>(f: &Fixture<S>, ids: &[HoldId]) -> Vec<Hold> {
    ids.iter()
        .map(|&id| f.shop.holds().get(OPERATOR, id).must("read a hold"))
        .collect()
}

/// The units of each pet its active holds set aside.
pub(super) fn held_units(holds: &[Hold]) -> BTreeMap<PetId, i64> {
    let mut held = BTreeMap::new();
    for line in holds
        .iter()
        .filter(|h| h.ended.is_none())
        .flat_map(|h| &h.lines)
    {
        *held.entry(line.pet_id).or_insert(0) += i64::from(line.quantity.get());
    }
    held
}

/// Checks what every step keeps of holds (the module's list).
pub(super) fn check(
    world: &World,
    now: chrono::DateTime<chrono::Utc>,
    op: &Op,
    context: &str,
) -> Result<(), TestCaseError> {
    let movements: Vec<_> = world.ledger.values().flatten().collect();
    for hold in &world.holds {
        let of_hold = |kind: MovementKind| {
            movements
                .iter()
                .filter(|m| m.hold_id == Some(hold.id) && m.kind == kind)
                .count()
        };
        let lines = hold.lines.len();
        prop_assert_eq!(
            of_hold(MovementKind::Held),
            lines,
            "{}: hold {} placed once per line",
            context,
            hold.id
        );
        let endings = [
            (HoldEnd::Released, of_hold(MovementKind::HoldReleased)),
            (HoldEnd::Expired, of_hold(MovementKind::HoldExpired)),
            (HoldEnd::Consumed, of_hold(MovementKind::HoldCommitted)),
        ];
        for (how, count) in endings {
            let expected = if hold.ended.is_some_and(|e| e.how == how) {
                lines
            } else {
                0
            };
            prop_assert_eq!(
                count,
                expected,
                "{}: hold {} ended {:?} has {} {:?} movements",
                context,
                hold.id,
                hold.ended,
                count,
                how
            );
        }
        if let Some(ending) = hold.ended.filter(|e| e.how == HoldEnd::Consumed) {
            prop_assert!(
                ending.at < hold.expires_at,
                "{}: hold {} checked out after its expiry",
                context,
                hold.id
            );
            let order = world.orders.iter().find(|o| Some(o.id) == ending.order_id);
            // A cancelled order is gone; one that is there has the hold's lines.
            let same = order.is_none_or(|o| {
                o.lines.len() == lines
                    && o.lines.iter().zip(&hold.lines).all(|(ol, hl)| {
                        (ol.line_no, ol.pet_id, ol.quantity) == (hl.line_no, hl.pet_id, hl.quantity)
                    })
            });
            prop_assert!(
                same,
                "{}: hold {} became order {:?}, not its lines",
                context,
                hold.id,
                ending.order_id
            );
        }
        if matches!(op, Op::Sweep) {
            prop_assert!(
                !hold.due_at(now),
                "{}: hold {} outlived a sweep",
                context,
                hold.id
            );
        }
    }
    Ok(())
}

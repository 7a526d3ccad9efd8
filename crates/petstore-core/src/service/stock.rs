//! What the stock rules decide on, read for a use case, and what they decide, written with its
//! movement of the stock ledger.

use std::collections::BTreeMap;

use super::Service;
use crate::checkout::{NewLine, PricedLine};
use crate::clock::Clock;
use crate::error::{DomainError, LineRefusal};
use crate::ids::PetId;
use crate::ledger::{Balances, Entry, NewMovement};
use crate::model::{Order, OrderLine, Pet};
use crate::repository::{Store, Transaction};
use crate::rules::{PetStock, Transition};
use crate::values::Quantity;

/// The pets a change names, each with the facts the rules read of it, read (and so locked)
/// in ascending id: the one order every write locks pets in. Pets that do not exist are
/// left out.
pub(super) type LockedPets = BTreeMap<PetId, (Pet, PetStock)>;

/// Reads and locks the pets `ids` name, in ascending id (see [`LockedPets`]).
pub(super) fn lock_pets(
    tx: &mut dyn Transaction,
    ids: impl IntoIterator<Item = PetId>,
) -> Result<LockedPets, DomainError> {
    let mut ids: Vec<PetId> = ids.into_iter().collect();
    ids.sort_unstable();
    ids.dedup();
    let mut pets = LockedPets::new();
    for id in ids {
        if let Some(pet) = tx.pet(id)? {
            let stock = pet_stock(tx, &pet)?;
            pets.insert(id, (pet, stock));
        }
    }
    Ok(pets)
}

/// Judges each of `lines` by `rule`, against the facts the lines before it left (so demand is
/// summed per pet), and gives each line's pet and transition; or refuses them all, naming
/// every refused line (`CheckoutRefused`). A pet missing from `pets` is `unknown_pet`.
pub(super) fn judge_lines(
    pets: &mut LockedPets,
    lines: &[NewLine],
    rule: impl Fn(&Pet, PetStock, Quantity) -> Result<Transition, DomainError>,
) -> Result<Vec<(NewLine, Pet, Transition)>, DomainError> {
    let mut refused = Vec::new();
    let mut judged = Vec::new();
    for (line, line_no) in lines.iter().zip(1u16..) {
        let verdict = match pets.get_mut(&line.pet_id) {
            None => Err(DomainError::UnknownPet { id: line.pet_id }),
            Some((pet, stock)) => rule(pet, *stock, line.quantity).map(|transition| {
                #[cfg(not(feature = "plant-lines-separately"))]
                {
                    *stock = transition.after;
                }
                (*line, pet.clone(), transition)
            }),
        };
        match verdict {
            Ok(line) => judged.push(line),
            Err(error) => refused.push(LineRefusal { line_no, error }),
        }
    }
    if refused.is_empty() {
        Ok(judged)
    } else {
        Err(DomainError::CheckoutRefused { lines: refused })
    }
}

/// Judges `lines` as [`judge_lines`] does, each by `rule` and at its pet's price (an unpriced
/// pet is `price_missing`): what a checkout, of lines or of a hold, places.
pub(super) fn judge_priced_lines(
    pets: &mut LockedPets,
    lines: &[NewLine],
    rule: impl Fn(PetStock, Quantity) -> Result<Transition, DomainError>,
) -> Result<Vec<(PricedLine, Pet, Transition)>, DomainError> {
    let judged = judge_lines(pets, lines, |pet, stock, quantity| match pet.price {
        None => Err(DomainError::PriceMissing { pet_id: pet.id }),
        Some(_) => rule(stock, quantity),
    })?;
    Ok(judged
        .into_iter()
        .map(|(line, pet, transition)| {
            let priced = PricedLine {
                pet_id: pet.id,
                quantity: line.quantity,
                price: pet.price,
            };
            (priced, pet, transition)
        })
        .collect())
}

/// The pets of an open order's lines with the facts the rules read of them, in ascending pet
/// id: the one order every write locks pets in. Open orders keep their pets from being
/// deleted, so a missing pet means the stored data is inconsistent.
pub(super) fn order_pets(
    tx: &mut dyn Transaction,
    order: &Order,
) -> Result<Vec<(OrderLine, Pet, PetStock)>, DomainError> {
    let mut lines = order.lines.clone();
    lines.sort_unstable_by_key(|line| line.pet_id);
    lines
        .into_iter()
        .map(|line| {
            let pet = tx.pet(line.pet_id)?.ok_or_else(|| {
                DomainError::storage(format!(
                    "order {} is open but its pet {} is gone",
                    order.id, line.pet_id
                ))
            })?;
            let facts = pet_stock(tx, &pet)?;
            Ok((line, pet, facts))
        })
        .collect()
}

/// The facts the stock rules decide on: the pet's status, its stock and its open orders.
pub(super) fn pet_stock(tx: &mut dyn Transaction, pet: &Pet) -> Result<PetStock, DomainError> {
    let item = tx
        .inventory_item(pet.id)?
        .ok_or_else(|| DomainError::storage(format!("pet {} has no inventory entry", pet.id)))?;
    Ok(PetStock {
        pet_id: pet.id,
        status: pet.status,
        stock: item.quantity,
        open_orders: tx.open_order_count(pet.id)?,
        committed: tx.committed_units(pet.id)?,
        held: item.held,
    })
}

impl<S: Store, C: Clock> Service<S, C> {
    /// Writes what a rule decided: the stock level and the pet's status, where they changed,
    /// and the movement of the stock ledger, as part of `entry`, with the cause of these use
    /// cases.
    pub(super) fn apply(
        &self,
        tx: &mut dyn Transaction,
        pet: &Pet,
        transition: &Transition,
        entry: Entry,
    ) -> Result<(), DomainError> {
        self.apply_all(tx, [(pet, transition, entry)])
    }

    /// Writes what a rule decided for each of `changes`, as [`apply`](Self::apply) does, with
    /// their movements recorded together: a store writes them in one statement where it can.
    pub(super) fn apply_all<'p>(
        &self,
        tx: &mut dyn Transaction,
        changes: impl IntoIterator<Item = (&'p Pet, &'p Transition, Entry)>,
    ) -> Result<(), DomainError> {
        let mut movements = Vec::new();
        for (pet, transition, entry) in changes {
            let Transition {
                before,
                after,
                change,
                ..
            } = *transition;
            if after.status != before.status {
                tx.update_pet(&Pet {
                    status: after.status,
                    ..pet.clone()
                })?;
            }
            if after.stock != before.stock {
                tx.set_stock(pet.id, after.stock)?;
            }
            if let Some(change) = change {
                movements.push(NewMovement {
                    pet_id: pet.id,
                    change,
                    after: Balances {
                        available: after.stock,
                        held: after.held,
                        committed: after.committed,
                    },
                    entry,
                });
            }
        }
        tx.record_movements(self.clock.now(), &self.cause, &movements)
    }
}

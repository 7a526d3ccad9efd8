//! What the stock rules decide on, read for a use case, and what they decide, written with its
//! movement of the stock ledger.

use super::Service;
use crate::clock::Clock;
use crate::error::DomainError;
use crate::ledger::{Entry, NewMovement};
use crate::model::{Order, OrderLine, Pet};
use crate::repository::{Store, Transaction};
use crate::rules::{PetStock, Transition};

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
            let movement = NewMovement {
                pet_id: pet.id,
                change,
                available_after: after.stock,
                committed_after: after.committed,
                entry,
            };
            tx.record_movements(self.clock.now(), &self.cause, &[movement])?;
        }
        Ok(())
    }
}

//! A delivery: stock received for many pets at once, entered as staff count it, kept or
//! refused whole.

use super::{InventoryUseCases, pet_stock, require};
use crate::access::Caller;
use crate::clock::Clock;
use crate::error::{DomainError, LineRefusal, Resource};
use crate::events::DomainEvent;
use crate::ids::PetId;
use crate::ledger::{AdjustmentUnits, Entry, Reason};
use crate::model::InventoryItem;
use crate::permission::Permission;
use crate::precondition::Precondition;
use crate::repository::{Store, Transaction};
use crate::validation::ValidationError;

/// One line of a delivery: units of a pet received, guarded by a condition on the pet's
/// inventory entry as the line was entered (its version, as `If-Match` does).
#[derive(Debug, Clone)]
pub struct Receipt<P> {
    /// The pet.
    pub pet_id: PetId,
    /// The units received: 1 to 1,000,000 (an adjustment's bound).
    pub units: AdjustmentUnits,
    /// What the entry must still be for the line to be received.
    pub condition: P,
}

/// The most lines one delivery holds: a page of the stock list.
pub const MAX_RECEIPTS: usize = 100;

impl<S: Store, C: Clock> InventoryUseCases<'_, S, C> {
    /// Receives a delivery (staff): each line's units into its pet's stock, as adjustments
    /// with `reason`, in one transaction. All or nothing: when any line is refused (its pet
    /// gone, its entry changed since its condition was taken, units out of bounds), nothing
    /// is received and [`DomainError::DeliveryRefused`] names every refused line. Pets are
    /// locked in id order, as checkouts lock them, so that the two never wait on each other
    /// in a circle. Gives back each line's entry after it, in the lines' order.
    pub fn receive<P: Precondition<InventoryItem>>(
        &self,
        caller: Caller,
        reason: &Reason,
        lines: &[Receipt<P>],
    ) -> Result<Vec<InventoryItem>, DomainError> {
        caller.require(Permission::ManageStore)?;
        judge_receipts(lines)?;
        let mut by_pet: Vec<usize> = (0..lines.len()).collect();
        by_pet.sort_by_key(|&at| lines[at].pet_id);
        self.shop.change(|tx| {
            let mut refused = Vec::new();
            let mut received = Vec::new();
            for &at in &by_pet {
                match receipt(tx, &lines[at]) {
                    Ok(judged) => received.push((at, judged)),
                    Err(error) if error.is_infrastructure() => return Err(error),
                    Err(error) => refused.push(LineRefusal {
                        line_no: line_no(at),
                        error,
                    }),
                }
            }
            if !refused.is_empty() {
                refused.sort_by_key(|line| line.line_no);
                return Err(DomainError::DeliveryRefused { lines: refused });
            }
            let mut events: Vec<DomainEvent> = Vec::new();
            let mut after = vec![None; lines.len()];
            for (at, (pet, transition)) in received {
                let entry = Entry::because(reason.clone());
                self.shop.apply(tx, &pet, &transition, entry)?;
                events.extend(transition.events.iter().cloned());
                after[at] = Some(transition.after.inventory_item());
            }
            Ok((after.into_iter().flatten().collect(), events))
        })
    }
}

/// The checks of a delivery that need no store: 1 to [`MAX_RECEIPTS`] lines, each pet on one
/// line, each line's units in.
fn judge_receipts<P>(lines: &[Receipt<P>]) -> Result<(), DomainError> {
    if lines.is_empty() || lines.len() > MAX_RECEIPTS {
        return Err(ValidationError::new("lines", "a delivery has 1 to 100 lines").into());
    }
    let mut refused = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        if lines[..at]
            .iter()
            .any(|before| before.pet_id == line.pet_id)
        {
            refused.push(LineRefusal {
                line_no: line_no(at),
                error: DomainError::PetRepeated {
                    pet_id: line.pet_id,
                    line_no: line_no(at),
                },
            });
        } else if line.units.get() < 0 {
            refused.push(LineRefusal {
                line_no: line_no(at),
                error: ValidationError::new("units", "a delivery brings units in: 1 or more")
                    .into(),
            });
        }
    }
    match refused.is_empty() {
        true => Ok(()),
        false => Err(DomainError::DeliveryRefused { lines: refused }),
    }
}

/// A line's number, from 1 (a delivery has at most [`MAX_RECEIPTS`]).
fn line_no(at: usize) -> u16 {
    u16::try_from(at + 1).unwrap_or(u16::MAX)
}

/// One line judged against its pet's stock as it is: the pet and what receiving it does.
fn receipt<P: Precondition<InventoryItem>>(
    tx: &mut dyn Transaction,
    line: &Receipt<P>,
) -> Result<(crate::model::Pet, crate::rules::Transition), DomainError> {
    let pet = tx
        .pet(line.pet_id)?
        .ok_or_else(|| DomainError::not_found(Resource::InventoryItem, line.pet_id))?;
    let facts = pet_stock(tx, &pet)?;
    require(
        &line.condition,
        &facts.inventory_item(),
        Resource::InventoryItem,
    )?;
    let transition = facts.adjust(line.units)?;
    Ok((pet, transition))
}

//! Holds in memory. A pet's held units are summed from its active holds when read.

use std::borrow::Borrow;

use chrono::{DateTime, Utc};

use super::next_id;
use super::{Catalogue, View};
use crate::hold::{Ending, HeldTotals, Hold, PlacedHold};
use crate::ids::{HoldId, PetId};
use crate::repository::{HoldReader, HoldWriter, RepoResult};
use crate::values::Stock;

impl<C: Borrow<Catalogue>> HoldReader for View<'_, C> {
    fn hold(&mut self, id: HoldId) -> RepoResult<Option<Hold>> {
        Ok(self.catalogue.borrow().holds.get(&id).cloned())
    }

    fn hold_pets(&mut self, id: HoldId) -> RepoResult<Vec<PetId>> {
        let hold = self.catalogue.borrow().holds.get(&id).cloned();
        Ok(hold
            .map(|hold| hold.lines.iter().map(|line| line.pet_id).collect())
            .unwrap_or_default())
    }

    fn due_holds(&mut self, now: DateTime<Utc>, limit: u32) -> RepoResult<Vec<HoldId>> {
        let mut due: Vec<(DateTime<Utc>, HoldId)> = self
            .catalogue
            .borrow()
            .holds
            .values()
            .filter(|hold| hold.due_at(now))
            .map(|hold| (hold.expires_at, hold.id))
            .collect();
        due.sort_unstable();
        Ok(due
            .into_iter()
            .take(limit as usize)
            .map(|(_, id)| id)
            .collect())
    }

    fn held_totals(&mut self, now: DateTime<Utc>) -> RepoResult<HeldTotals> {
        let active = self.catalogue.borrow().active_holds();
        Ok(
            active.fold(HeldTotals::default(), |totals, hold| HeldTotals {
                oldest_due: match totals.oldest_due {
                    Some(due) if hold.due_at(now) => Some(due.min(hold.expires_at)),
                    None if hold.due_at(now) => Some(hold.expires_at),
                    other => other,
                },
                holds: totals.holds + 1,
                units: totals.units
                    + hold
                        .lines
                        .iter()
                        .map(|line| u64::from(line.quantity.get()))
                        .sum::<u64>(),
            }),
        )
    }

    fn holds_open(&mut self) -> RepoResult<bool> {
        Ok(true)
    }
}

impl HoldWriter for View<'_, Catalogue> {
    fn insert_hold(&mut self, hold: &PlacedHold) -> RepoResult<Hold> {
        let id = next_id(&mut self.catalogue.last_hold_id, HoldId::new)?;
        let hold = hold.clone().into_hold(id);
        self.catalogue.holds.insert(id, hold.clone());
        Ok(hold)
    }

    fn end_hold(&mut self, id: HoldId, ending: &Ending) -> RepoResult<()> {
        match self.catalogue.holds.get_mut(&id) {
            Some(hold) if hold.ended.is_none() => {
                hold.ended = Some(*ending);
                Ok(())
            }
            Some(_) => Err(crate::DomainError::storage(format!(
                "hold {id} has ended already"
            ))),
            None => Err(Self::missing("hold", id)),
        }
    }
}

impl Catalogue {
    fn active_holds(&self) -> impl Iterator<Item = &Hold> {
        self.holds.values().filter(|hold| hold.ended.is_none())
    }

    /// The units the pet's active holds set aside.
    pub(super) fn held(&self, pet_id: PetId) -> Stock {
        let units = self
            .active_holds()
            .flat_map(|hold| &hold.lines)
            .filter(|line| line.pet_id == pet_id)
            .map(|line| line.quantity.get())
            .sum();
        Stock::from_level(units)
    }
}

//! The stock ledger in memory: begun from the start, as on a new database.

use std::borrow::Borrow;

use chrono::{DateTime, Utc};

use super::next_id;
use super::{Catalogue, View};
use crate::actor::Cause;
use crate::ids::MovementId;
use crate::ledger::{Movement, MovementQuery, NewMovement};
use crate::repository::{LedgerReader, LedgerWriter, RepoResult};

impl<C: Borrow<Catalogue>> LedgerReader for View<'_, C> {
    fn movements(&mut self, query: &MovementQuery) -> RepoResult<Vec<Movement>> {
        Ok(self
            .committed
            .movements
            .iter()
            .chain(&self.pending.movements)
            .filter(|m| m.pet_id == query.pet_id && query.after.is_none_or(|a| m.id > a))
            .take(query.limit.get() as usize + 1)
            .cloned()
            .collect())
    }

    fn ledger_open(&mut self) -> RepoResult<bool> {
        Ok(true)
    }
}

impl LedgerWriter for View<'_, Catalogue> {
    fn record_movements(
        &mut self,
        time: DateTime<Utc>,
        cause: &Cause,
        movements: &[NewMovement],
    ) -> RepoResult<()> {
        let mut last = self
            .pending
            .movements
            .last()
            .or(self.committed.movements.last())
            .map_or(0, |m| m.id.get());
        for new in movements {
            let NewMovement {
                pet_id,
                change,
                after,
                entry,
            } = new.clone();
            self.pending.movements.push(Movement {
                id: next_id(&mut last, MovementId::new)?,
                pet_id,
                kind: change.kind,
                quantity: change.quantity,
                available_change: change.available,
                held_change: change.held,
                committed_change: change.committed,
                available_after: after.available,
                held_after: after.held,
                committed_after: after.committed,
                order_id: entry.order_line.map(|(order, _)| order),
                line_no: entry.order_line.map(|(_, line)| line),
                hold_id: entry.hold,
                reason: entry.reason,
                actor: cause.actor.clone(),
                request_id: cause.request_id.clone(),
                time,
            });
        }
        Ok(())
    }
}

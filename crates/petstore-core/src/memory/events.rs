//! The event log in memory.

use std::borrow::Borrow;

use super::next_id;
use super::{Catalogue, View};
use crate::actor::Cause;
use crate::events::{DomainEvent, Event};
use crate::ids::EventId;
use crate::repository::{EventReader, EventWriter, RepoResult};
use chrono::{DateTime, Utc};

impl<C: Borrow<Catalogue>> EventReader for View<'_, C> {
    fn events_after(&mut self, after: Option<EventId>, limit: u32) -> RepoResult<Vec<Event>> {
        Ok(self
            .committed
            .events
            .iter()
            .chain(&self.pending.events)
            .filter(|e| after.is_none_or(|a| e.id > a))
            .take(limit as usize)
            .cloned()
            .collect())
    }

    fn last_event_id(&mut self) -> RepoResult<Option<EventId>> {
        Ok(self
            .pending
            .events
            .last()
            .or(self.committed.events.last())
            .map(|event| event.id))
    }
}

impl EventWriter for View<'_, Catalogue> {
    fn append_events(
        &mut self,
        time: DateTime<Utc>,
        cause: &Cause,
        events: &[DomainEvent],
    ) -> RepoResult<()> {
        let mut last = self
            .pending
            .events
            .last()
            .or(self.committed.events.last())
            .map_or(0, |e| e.id.get());
        for event in events {
            let id = next_id(&mut last, EventId::new)?;
            self.pending.events.push(Event {
                id,
                time,
                event_type: event.event_type(),
                subject: event.subject(),
                data: event.data(),
                traceparent: cause.trace.clone(),
                actor: cause.actor.clone(),
            });
        }
        Ok(())
    }
}

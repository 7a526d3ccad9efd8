//! The event feed's use cases (staff): where it ends, and what came after a position.

use super::Service;
use crate::access::Caller;
use crate::clock::Clock;
use crate::error::DomainError;
use crate::events::Event;
use crate::ids::EventId;
use crate::permission::Permission;
use crate::repository::Store;
use crate::values::PageSize;

/// The use cases of the event feed; see [`Service::events`].
#[derive(Debug)]
pub struct EventUseCases<'a, S, C> {
    pub(super) shop: &'a Service<S, C>,
}

impl<S: Store, C: Clock> EventUseCases<'_, S, C> {
    /// The id of the latest recorded event, if any: where a follower that wants only what
    /// happens from now on starts.
    pub fn last_id(&self, caller: Caller) -> Result<Option<EventId>, DomainError> {
        caller.require(Permission::ManageStore)?;
        self.shop
            .store
            .read_one(|snapshot| snapshot.last_event_id())
    }

    /// Up to `limit` events after `after`, oldest first.
    pub fn after(
        &self,
        caller: Caller,
        after: Option<EventId>,
        limit: PageSize,
    ) -> Result<Vec<Event>, DomainError> {
        caller.require(Permission::ManageStore)?;
        self.shop
            .store
            .read_one(|snapshot| snapshot.events_after(after, limit.get()))
    }
}

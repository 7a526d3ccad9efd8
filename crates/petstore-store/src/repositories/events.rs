//! The feed as the `events` table holds it, read the same way on both backends. Each backend's
//! `EventReader` (`sqlite/tx.rs`, `postgres/tx.rs`) decides when that is the feed: on SQLite
//! always; on PostgreSQL once what has committed is stamped.

use diesel::prelude::*;
use petstore_core::{Event, EventId, RepoResult};

use super::Tx;
use crate::error::{QueryResultExt, StoreError};
use crate::records::EventRecord;
use crate::schema::events;
use crate::statements::convert;

impl Tx<'_> {
    /// Up to `limit` events of the table after `after`, oldest first.
    pub(crate) fn stored_events_after(
        &mut self,
        after: Option<EventId>,
        limit: u32,
    ) -> RepoResult<Vec<Event>> {
        let rows = self
            .page(
                events::table
                    .filter(events::id.gt(after.map_or(0, EventId::get)))
                    .order(events::id.asc())
                    .select(EventRecord::as_select()),
                i64::from(limit),
            )
            .or_storage()?;
        convert(rows)
    }

    /// The id of the table's last event, if any.
    pub(crate) fn stored_last_event_id(&mut self) -> RepoResult<Option<EventId>> {
        let last: Option<i64> = events::table
            .select(diesel::dsl::max(events::id))
            .get_result(self.flushed())
            .or_storage()?;
        event_id(last)
    }
}

/// An id read from the table, checked.
pub(crate) fn event_id(id: Option<i64>) -> RepoResult<Option<EventId>> {
    id.map(EventId::new)
        .transpose()
        .map_err(|e| StoreError::Corrupt(e.to_string()).into())
}

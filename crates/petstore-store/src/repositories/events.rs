//! The feed, in the `events` table. Appending to the outbox is each backend's own
//! (`sqlite/tx.rs`, `postgres/tx.rs`): how ids become visible in order differs.

use diesel::prelude::*;
use petstore_core::{Event, EventId, EventReader, RepoResult};

use super::Tx;
use crate::error::{QueryResultExt, StoreError};
use crate::records::EventRecord;
use crate::schema::events;
use crate::statements::convert;

impl EventReader for Tx<'_> {
    fn events_after(&mut self, after: Option<EventId>, limit: u32) -> RepoResult<Vec<Event>> {
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

    fn last_event_id(&mut self) -> RepoResult<Option<EventId>> {
        let last: Option<i64> = events::table
            .select(diesel::dsl::max(events::id))
            .get_result(self.conn)
            .or_storage()?;
        last.map(EventId::new)
            .transpose()
            .map_err(|e| StoreError::Corrupt(e.to_string()).into())
    }
}

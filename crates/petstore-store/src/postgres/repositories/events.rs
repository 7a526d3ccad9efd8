//! The outbox and the feed, in the `events` table.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use petstore_core::{
    DomainEvent, Event, EventId, EventReader, EventWriter, RepoResult, TraceParent,
};

use super::{LockSpace, PgTx};
use crate::error::{QueryResultExt, StoreError};
use crate::postgres::schema::events;
use crate::records::EventRecord;
use crate::statements::convert;

impl EventReader for PgTx<'_> {
    fn events_after(&mut self, after: Option<EventId>, limit: u32) -> RepoResult<Vec<Event>> {
        let rows = events::table
            .filter(events::id.gt(after.map_or(0, EventId::get)))
            .order(events::id.asc())
            .limit(i64::from(limit))
            .select(EventRecord::as_select())
            .load(self.conn)
            .or_storage()?;
        convert(rows)
    }

    fn last_event_id(&mut self) -> RepoResult<Option<EventId>> {
        let last: Option<i64> = events::table
            .select(diesel::dsl::max(events::id))
            .first(self.conn)
            .or_storage()?;
        last.map(EventId::new)
            .transpose()
            .map_err(|e| StoreError::Corrupt(e.to_string()).into())
    }
}

impl EventWriter for PgTx<'_> {
    /// Appends under the outbox lock, held until the transaction ends. Ids come from a
    /// sequence, and a sequence hands them out in the order transactions ask, not the order
    /// they commit: without the lock, a follower could read event 43 before 42 commits, move
    /// past 42 and never see it. With it, appenders commit in id order, so what a reader sees
    /// is always every event up to some id. The cost: changes that record events commit one
    /// at a time (everything before the append still runs in parallel).
    fn append_events(
        &mut self,
        time: DateTime<Utc>,
        cause: Option<&TraceParent>,
        events: &[DomainEvent],
    ) -> RepoResult<()> {
        if events.is_empty() {
            return Ok(());
        }
        self.lock(LockSpace::Outbox, 0)?;
        let rows: Vec<_> = events
            .iter()
            .map(|event| {
                (
                    events::time.eq(time),
                    events::event_type.eq(event.event_type().as_str()),
                    events::subject.eq(event.subject()),
                    events::data.eq(event.data()),
                    events::traceparent.eq(cause.map(TraceParent::as_str)),
                )
            })
            .collect();
        diesel::insert_into(events::table)
            .values(&rows)
            .execute(self.conn)
            .or_storage()?;
        Ok(())
    }
}

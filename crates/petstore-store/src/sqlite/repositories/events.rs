//! The outbox and the feed, in the `events` table.

use super::SqliteTx;
use crate::error::{QueryResultExt, StoreError};
use crate::sqlite::limit::limited;
use crate::sqlite::rows::{EventRow, NewEventRow, format_time};
use crate::sqlite::schema::events;
use crate::statements::convert;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use petstore_core::{DomainEvent, Event, EventId, RepoResult, TraceParent};
use petstore_core::{EventReader, EventWriter};

impl EventReader for SqliteTx<'_> {
    fn events_after(&mut self, after: Option<EventId>, limit: u32) -> RepoResult<Vec<Event>> {
        let rows = limited(
            events::table
                .filter(events::id.gt(after.map_or(0, EventId::get)))
                .order(events::id.asc())
                .select(EventRow::as_select()),
            i64::from(limit),
        )
        .load(self.conn)
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

impl EventWriter for SqliteTx<'_> {
    fn append_events(
        &mut self,
        time: DateTime<Utc>,
        cause: Option<&TraceParent>,
        events: &[DomainEvent],
    ) -> RepoResult<()> {
        if events.is_empty() {
            return Ok(());
        }
        let time = format_time(time);
        let rows: Vec<NewEventRow<'_>> = events
            .iter()
            .map(|event| NewEventRow {
                time: &time,
                event_type: event.event_type().as_str(),
                subject: event.subject(),
                data: event.data().to_string(),
                traceparent: cause.map(TraceParent::as_str),
            })
            .collect();
        // One row at a time: a single-row insert is a statement Diesel prepares once and keeps,
        // where a batch is built, parsed and wrapped in a savepoint of its own every time.
        for row in &rows {
            diesel::insert_into(events::table)
                .values(row)
                .execute(self.conn)
                .or_storage()?;
        }
        Ok(())
    }
}

//! The events' rows: what each backend writes of an event, and the row it reads back.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use petstore_core::{Actor, Cause, DomainEvent, Event, EventId, EventType, TraceParent};

use super::corrupt;
use crate::error::StoreError;
use crate::schema::events;
use crate::schema::sql_types::JsonText;

/// What each backend stores of an event beside its time and cause: the one mapping from a
/// domain event to its columns, so that a new column is written in one place.
#[derive(Debug)]
pub(crate) struct EventColumns {
    pub(crate) event_type: &'static str,
    pub(crate) subject: String,
    pub(crate) data: JsonText,
}

/// The `actor` column of a change's events: its JSON text, written once for all of them.
pub(crate) fn actor_column(cause: &Cause) -> Result<Option<String>, StoreError> {
    cause
        .actor
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(|e| StoreError::Corrupt(format!("an event's actor: {e}")))
}

impl EventColumns {
    pub(crate) fn of(event: &DomainEvent) -> Self {
        Self {
            event_type: event.event_type().as_str(),
            subject: event.subject(),
            data: JsonText(event.data_json()),
        }
    }
}

/// An event's row; read by name too, from PostgreSQL's `feed_after` (postgres/tx.rs).
#[derive(Debug, Queryable, QueryableByName, Selectable)]
#[diesel(table_name = events, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct EventRecord {
    pub(crate) id: i64,
    pub(crate) time: DateTime<Utc>,
    pub(crate) event_type: String,
    pub(crate) subject: String,
    pub(crate) data: serde_json::Value,
    pub(crate) traceparent: Option<String>,
    pub(crate) actor: Option<String>,
}

impl TryFrom<EventRecord> for Event {
    type Error = StoreError;

    fn try_from(row: EventRecord) -> Result<Self, StoreError> {
        let bad = corrupt("events", row.id);
        Ok(Event {
            id: EventId::new(row.id).map_err(&bad)?,
            time: row.time,
            event_type: row.event_type.parse::<EventType>().map_err(&bad)?,
            subject: row.subject,
            data: row.data,
            traceparent: row
                .traceparent
                .map(TraceParent::try_from)
                .transpose()
                .map_err(|e| StoreError::Corrupt(format!("events row {}: {e}", row.id)))?,
            actor: row
                .actor
                .as_deref()
                .map(serde_json::from_str::<Actor>)
                .transpose()
                .map_err(|e| StoreError::Corrupt(format!("events row {}: actor: {e}", row.id)))?,
        })
    }
}

//! A webhook subscription's row and its delivery attempts' rows, and their conversions.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use petstore_core::{
    DeliveryAttempt, DeliveryId, DeliveryOutcome, DeliveryState, EventId, EventType, EventTypes,
    Webhook, WebhookId, WebhookUrl,
};

use super::{corrupt, out_of_range};
use crate::error::StoreError;
use crate::schema::{webhook_deliveries, webhooks};

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = webhooks, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct WebhookRecord {
    pub(crate) id: i64,
    pub(crate) url: String,
    pub(crate) event_types: String,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) delivered_through: i64,
    pub(crate) failed_attempts: i64,
    pub(crate) next_attempt_at: Option<DateTime<Utc>>,
    pub(crate) delivered_events: i64,
}

impl TryFrom<WebhookRecord> for Webhook {
    type Error = StoreError;

    fn try_from(row: WebhookRecord) -> Result<Self, StoreError> {
        let bad = corrupt("webhooks", row.id);
        let types = row
            .event_types
            .split(' ')
            .map(str::parse::<EventType>)
            .collect::<Result<Vec<_>, _>>()
            .map_err(&bad)?;
        let delivered_through = match row.delivered_through {
            0 => None,
            n => Some(EventId::new(n).map_err(&bad)?),
        };
        Ok(Webhook {
            id: WebhookId::new(row.id).map_err(&bad)?,
            url: WebhookUrl::parse(&row.url).map_err(&bad)?,
            events: EventTypes::new(types).map_err(&bad)?,
            created_at: row.created_at,
            delivery: DeliveryState {
                delivered_through,
                failed_attempts: u32::try_from(row.failed_attempts)
                    .map_err(|_| out_of_range("webhooks", row.id, "failed_attempts"))?,
                next_attempt_at: row.next_attempt_at,
                delivered_events: u64::try_from(row.delivered_events)
                    .map_err(|_| out_of_range("webhooks", row.id, "delivered_events"))?,
            },
        })
    }
}

/// The space-separated event types a subscription's row stores.
pub(crate) fn event_type_list(types: &EventTypes) -> String {
    let names: Vec<&str> = types.as_slice().iter().map(|t| t.as_str()).collect();
    names.join(" ")
}

/// A subscription's cursor as stored: 0 for "nothing delivered yet".
pub(crate) fn cursor(state: &DeliveryState) -> i64 {
    state.delivered_through.map_or(0, EventId::get)
}

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = webhook_deliveries, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct DeliveryRecord {
    pub(crate) id: i64,
    pub(crate) event_id: i64,
    pub(crate) event_type: String,
    pub(crate) attempt: i64,
    pub(crate) attempted_at: DateTime<Utc>,
    pub(crate) outcome: String,
    pub(crate) status_code: Option<i32>,
    pub(crate) error: Option<String>,
    pub(crate) next_attempt_at: Option<DateTime<Utc>>,
}

impl TryFrom<DeliveryRecord> for DeliveryAttempt {
    type Error = StoreError;

    fn try_from(row: DeliveryRecord) -> Result<Self, StoreError> {
        let bad = corrupt("webhook_deliveries", row.id);
        let range = |column| out_of_range("webhook_deliveries", row.id, column);
        Ok(DeliveryAttempt {
            id: DeliveryId::new(row.id).map_err(&bad)?,
            event_id: EventId::new(row.event_id).map_err(&bad)?,
            event_type: row.event_type.parse().map_err(&bad)?,
            attempt: u32::try_from(row.attempt).map_err(|_| range("attempt"))?,
            attempted_at: row.attempted_at,
            outcome: match row.outcome.as_str() {
                "delivered" => DeliveryOutcome::Delivered,
                "failed" => DeliveryOutcome::Failed,
                _ => return Err(range("outcome")),
            },
            status_code: row
                .status_code
                .map(u16::try_from)
                .transpose()
                .map_err(|_| range("status_code"))?,
            error: row.error,
            next_attempt_at: row.next_attempt_at,
        })
    }
}

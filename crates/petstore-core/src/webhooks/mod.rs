//! Webhooks: subscriptions that receive matching events by HTTP POST, signed the
//! [Standard Webhooks](https://www.standardwebhooks.com/) way, in order and at least once.
//!
//! This module holds the rules; the HTTP layer does the sending. A subscription keeps a
//! cursor, [`DeliveryState::delivered_through`]: every matching event up to it has been
//! delivered (answered with a 2xx). The next matching event after the cursor is the only one
//! in flight, so a receiver sees events in order; the cursor moves only after a 2xx and in
//! the same transaction as the attempt's record, so a crash between sending and recording
//! sends the event again (at least once; `webhook-id` lets the receiver drop the repeat).
//! A failed attempt is retried after an exponentially growing, capped delay
//! ([`RetryPolicy`]), for as long as the subscription exists: events are never dropped.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize};

use crate::events::{Event, EventType};
use crate::ids::{DeliveryId, EventId, WebhookId};
use crate::validation::ValidationError;
use crate::values::PageSize;

mod run;
mod signing;
mod url;

pub use run::{DeliveryRun, READ_AHEAD, RECORD_BATCH, RECORD_INTERVAL, RunRecord};
pub use signing::WebhookSecret;
pub use url::{WEBHOOK_URL_PATTERN, WebhookUrl, is_public_address};

/// The event types a subscription receives: at least one, each at most once.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct EventTypes(Vec<EventType>);

impl EventTypes {
    /// Checks that `types` is not empty and repeats nothing.
    pub fn new(types: Vec<EventType>) -> Result<Self, ValidationError> {
        if types.is_empty() {
            return Err(ValidationError::new(
                "events",
                "must name at least one event type",
            ));
        }
        for (i, t) in types.iter().enumerate() {
            if types[..i].contains(t) {
                return Err(ValidationError::new(
                    "events",
                    format!("names {t} more than once"),
                ));
            }
        }
        Ok(Self(types))
    }

    /// Whether an event of this type is delivered.
    pub fn contains(&self, event_type: EventType) -> bool {
        self.0.contains(&event_type)
    }

    /// The types, in the order they were given.
    pub fn as_slice(&self) -> &[EventType] {
        &self.0
    }
}

impl<'de> Deserialize<'de> for EventTypes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let types = Vec::<EventType>::deserialize(deserializer)?;
        Self::new(types).map_err(|e| serde::de::Error::custom(e.reason))
    }
}

/// A subscription to create.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewWebhook {
    /// Where to POST the events.
    pub url: WebhookUrl,
    /// Which events to send.
    pub events: EventTypes,
}

/// An admin's request to have a subscription's events sent again (a receiver lost them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookResend {
    /// The first event to send again: the subscription's events from this id on are sent
    /// again, in order. At most the first event it is still owed (`deliveredThrough` + 1).
    pub from_event_id: EventId,
}

/// Where a subscription's deliveries stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeliveryState {
    /// Every matching event up to this id has been delivered (0: none yet). A subscription
    /// starts at the latest event when it is created: it receives what happens afterwards.
    #[serde(with = "cursor")]
    #[cfg_attr(feature = "openapi", schema(value_type = i64, minimum = 0))]
    pub delivered_through: Option<EventId>,
    /// Failed attempts at the next event since the last success.
    pub failed_attempts: u32,
    /// When the next attempt is due, after a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// Events delivered since the subscription was made (answered with a 2xx).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = i64, minimum = 0))]
    pub delivered_events: u64,
}

/// The cursor's JSON form: 0 for "none yet", so it is always an integer.
mod cursor {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::ids::EventId;

    pub(super) fn serialize<S: Serializer>(id: &Option<EventId>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(id.map_or(0, EventId::get))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<EventId>, D::Error> {
        match i64::deserialize(d)? {
            0 => Ok(None),
            n => EventId::new(n)
                .map(Some)
                .map_err(|e| serde::de::Error::custom(e.reason)),
        }
    }
}

impl DeliveryState {
    /// A new subscription's state: nothing delivered, starting after `start_after`.
    pub fn starting_after(start_after: Option<EventId>) -> Self {
        Self {
            delivered_through: start_after,
            failed_attempts: 0,
            next_attempt_at: None,
            delivered_events: 0,
        }
    }

    /// Whether an attempt may be made at `now`.
    pub fn is_due(&self, now: DateTime<Utc>) -> bool {
        self.next_attempt_at.is_none_or(|at| at <= now)
    }
}

/// A subscription, as stored and listed: never its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    /// Its id.
    pub id: WebhookId,
    /// Where events are POSTed.
    pub url: WebhookUrl,
    /// Which events it receives.
    pub events: EventTypes,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// Where its deliveries stand.
    pub delivery: DeliveryState,
}

/// What became of one attempt to deliver an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum DeliveryOutcome {
    /// The receiver answered 2xx.
    Delivered,
    /// Anything else: another status, a refused or timed-out connection, a forbidden address.
    Failed,
}

impl DeliveryOutcome {
    /// The outcome as the API spells it.
    pub const fn as_str(self) -> &'static str {
        match self {
            DeliveryOutcome::Delivered => "delivered",
            DeliveryOutcome::Failed => "failed",
        }
    }
}

/// What the sender observed in one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptReport {
    /// The receiver's status code, if it answered.
    pub status_code: Option<u16>,
    /// Why the attempt failed when the receiver did not answer (or the address was refused).
    pub error: Option<String>,
}

impl AttemptReport {
    /// A 2xx answer delivers; anything else (including a redirect, which is not followed)
    /// fails.
    pub fn outcome(&self) -> DeliveryOutcome {
        match self.status_code {
            Some(200..=299) => DeliveryOutcome::Delivered,
            _ => DeliveryOutcome::Failed,
        }
    }
}

/// One attempt to deliver an event, as recorded and shown by `GET /v1/webhooks/{id}/deliveries`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeliveryAttempt {
    /// Its id; later attempts have larger ids.
    pub id: DeliveryId,
    /// The event sent (also the `webhook-id` header).
    pub event_id: EventId,
    /// The event's type.
    pub event_type: EventType,
    /// 1 for the first attempt at this event, 2 for the first retry, …
    pub attempt: u32,
    /// When it was made.
    pub attempted_at: DateTime<Utc>,
    /// What became of it.
    pub outcome: DeliveryOutcome,
    /// The receiver's status code, if it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u16>,
    /// Why it failed when the receiver did not answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When the event will be tried again, after a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<DateTime<Utc>>,
}

/// An attempt to record, before the store gives it an id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDeliveryAttempt {
    /// The subscription.
    pub webhook_id: WebhookId,
    /// The event sent.
    pub event_id: EventId,
    /// The event's type.
    pub event_type: EventType,
    /// Its number for this event.
    pub attempt: u32,
    /// When it was made.
    pub attempted_at: DateTime<Utc>,
    /// What became of it.
    pub outcome: DeliveryOutcome,
    /// The receiver's status code.
    pub status_code: Option<u16>,
    /// Why it failed.
    pub error: Option<String>,
    /// When it will be tried again.
    pub next_attempt_at: Option<DateTime<Utc>>,
}

impl NewDeliveryAttempt {
    /// The attempt as recorded, once the store has given it `id`.
    pub fn recorded(&self, id: DeliveryId) -> DeliveryAttempt {
        DeliveryAttempt {
            id,
            event_id: self.event_id,
            event_type: self.event_type,
            attempt: self.attempt,
            attempted_at: self.attempted_at,
            outcome: self.outcome,
            status_code: self.status_code,
            error: self.error.clone(),
            next_attempt_at: self.next_attempt_at,
        }
    }
}

/// The next delivery a subscription owes: the event, where to send it and how to sign it.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingDelivery {
    /// The subscription.
    pub webhook_id: WebhookId,
    /// Where to POST.
    pub url: WebhookUrl,
    /// What to sign with.
    pub secret: WebhookSecret,
    /// The event.
    pub event: Event,
    /// Which attempt at this event this is (1 for the first).
    pub attempt: u32,
}

/// How many delivery attempts are kept per subscription, the latest: enough to see a long
/// outage, without the table growing with every event ever delivered.
pub const KEPT_ATTEMPTS: u32 = 1000;

/// How long to wait before retrying: `first_retry`, doubled after each further failure, never
/// more than `max_delay`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The wait after the first failure.
    pub first_retry: Duration,
    /// The longest wait.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    /// 5 s after the first failure, then 10 s, 20 s, … up to an hour between attempts.
    fn default() -> Self {
        Self {
            first_retry: Duration::from_secs(5),
            max_delay: Duration::from_secs(3600),
        }
    }
}

impl RetryPolicy {
    /// The wait after the `failures`-th consecutive failure (1 for the first).
    pub fn delay_after(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(32);
        self.first_retry
            .saturating_mul(1u32 << doublings.min(31))
            .min(self.max_delay)
    }
}

/// Position for listing subscriptions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WebhookQuery {
    /// Only subscriptions with a larger id.
    pub after: Option<WebhookId>,
    /// Page size.
    pub limit: PageSize,
}

/// Position for listing a subscription's delivery attempts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryQuery {
    /// Only attempts with a larger id.
    pub after: Option<DeliveryId>,
    /// Page size.
    pub limit: PageSize,
}

/// `delay` after `now`, or the latest time there is.
pub(crate) fn later(now: DateTime<Utc>, delay: Duration) -> DateTime<Utc> {
    chrono::TimeDelta::from_std(delay)
        .ok()
        .and_then(|delta| now.checked_add_signed(delta))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// Whether `holder` may take a subscription's delivery lease at `now`, given the lease on
/// it (`(holder, expires)`, if any): when nobody holds it, `holder` itself does (a renewal),
/// or it has expired. Stores that decide in code share this rule; one that decides in SQL
/// states the same.
pub fn lease_is_free(
    lease: Option<(&str, DateTime<Utc>)>,
    holder: &str,
    now: DateTime<Utc>,
) -> bool {
    lease.is_none_or(|(current, expires)| current == holder || expires <= now)
}

#[cfg(test)]
mod tests;

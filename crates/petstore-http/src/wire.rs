//! The bodies the service sends that are not a resource as the domain has it: the CloudEvents
//! envelope of the feed, the stream and webhook deliveries, and the answers to a create whose
//! secret is shown once. Routes and the webhook dispatcher both use them; they import nothing
//! of either.

use chrono::{DateTime, Utc};
use petstore_core::{
    Actor, ApiKey, DeliveryState, Door, Event, EventType, EventTypes, KeyId, Name, Role, Webhook,
    WebhookId, WebhookUrl,
};
use serde::Serialize;
use utoipa::ToSchema;

/// A change, as a CloudEvents 1.0 event in the structured JSON format.
#[derive(Debug, Serialize, ToSchema)]
pub struct CloudEvent {
    /// Always `1.0`.
    specversion: &'static str,
    /// The event's id: a decimal integer, larger for later events.
    #[schema(pattern = "^[1-9][0-9]*$")]
    id: String,
    /// Where it comes from: this API.
    source: &'static str,
    /// What happened: `pet.created`, `order.placed`, …
    #[serde(rename = "type")]
    event_type: EventType,
    /// When the change was committed.
    time: DateTime<Utc>,
    /// The resource it is about, as a path under `/v1` (`pets/3`).
    subject: String,
    /// Always `application/json`.
    datacontenttype: &'static str,
    /// The resource after the change, `{"id"}` of a deleted one, or `{"petId", "from", "to"}`
    /// of a status change.
    data: serde_json::Value,
    /// Who caused the change (an extension attribute): `key` (an API key's holder),
    /// `operator` (the `petstore` command line) or `service` (one of the service's own
    /// chores). Absent for events recorded before actors were: unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, nullable = false, pattern = "^(key|operator|service)$")]
    actorkind: Option<&'static str>,
    /// The key's id, for a key's holder.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, pattern = "^[1-9][0-9]*$")]
    actorid: Option<String>,
    /// The key's name, for a key's holder; the chore's, for the service.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    actorname: Option<String>,
    /// The key's role, for a key's holder.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    actorrole: Option<Role>,
    /// The door a key's holder came through: `api` or `console`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    actordoor: Option<Door>,
}

impl From<Event> for CloudEvent {
    fn from(event: Event) -> Self {
        let (actorkind, actorid, actorname, actorrole, actordoor) = match event.actor {
            None => (None, None, None, None, None),
            Some(Actor::Key {
                id,
                name,
                role,
                door,
            }) => (
                Some("key"),
                Some(id.to_string()),
                Some(name.as_str().to_owned()),
                Some(role),
                Some(door),
            ),
            Some(Actor::Operator) => (Some("operator"), None, None, None, None),
            Some(Actor::Service { chore }) => (Some("service"), None, Some(chore), None, None),
        };
        CloudEvent {
            specversion: "1.0",
            id: event.id.to_string(),
            source: "/v1",
            event_type: event.event_type,
            time: event.time,
            subject: event.subject,
            datacontenttype: "application/json",
            data: event.data,
            actorkind,
            actorid,
            actorname,
            actorrole,
            actordoor,
        }
    }
}

/// A key just created: the one answer that shows its secret.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedApiKey {
    /// Its id.
    id: KeyId,
    /// What it is for.
    name: Name,
    /// What it may do.
    role: Role,
    /// The secret's first characters, to recognise it in a list.
    prefix: String,
    /// When it was created.
    created_at: DateTime<Utc>,
    /// The secret, to pass as `Authorization: Bearer <key>`. Shown this once: only its hash
    /// is stored.
    key: String,
}

impl CreatedApiKey {
    /// The answer to creating `key`, with its secret as `shown`.
    pub fn new(key: ApiKey, shown: String) -> Self {
        Self {
            id: key.id,
            name: key.name,
            role: key.role,
            prefix: key.prefix,
            created_at: key.created_at,
            key: shown,
        }
    }
}

/// A subscription just created: the one answer that shows its secret.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedWebhook {
    /// Its id.
    id: WebhookId,
    /// Where events are POSTed.
    url: WebhookUrl,
    /// Which events it receives.
    events: EventTypes,
    /// When it was created.
    created_at: DateTime<Utc>,
    /// Where its deliveries stand.
    delivery: DeliveryState,
    /// The signing secret (`whsec_…`), for verifying `webhook-signature` the Standard
    /// Webhooks way. Shown this once.
    secret: String,
}

impl CreatedWebhook {
    /// The answer to creating `webhook`, with its signing secret as `shown`.
    pub fn new(webhook: Webhook, shown: String) -> Self {
        Self {
            id: webhook.id,
            url: webhook.url,
            events: webhook.events,
            created_at: webhook.created_at,
            delivery: webhook.delivery,
            secret: shown,
        }
    }
}

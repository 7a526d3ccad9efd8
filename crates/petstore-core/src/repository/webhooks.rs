//! The webhook subscriptions' repository traits: subscriptions, their delivery state and
//! leases, and the attempts made.

use chrono::{DateTime, Utc};

use super::RepoResult;
use crate::ids::WebhookId;
use crate::webhooks::{
    DeliveryAttempt, DeliveryQuery, DeliveryState, NewDeliveryAttempt, NewWebhook, Webhook,
    WebhookQuery, WebhookSecret,
};

/// Reads webhook subscriptions and their delivery attempts.
pub trait WebhookReader {
    /// The webhook subscription with this id.
    fn webhook(&mut self, id: WebhookId) -> RepoResult<Option<Webhook>>;
    /// Webhook subscriptions, by id.
    fn webhooks(&mut self, query: &WebhookQuery) -> RepoResult<Vec<Webhook>>;
    /// The signing secret of a subscription.
    fn webhook_secret(&mut self, id: WebhookId) -> RepoResult<Option<WebhookSecret>>;
    /// A subscription's delivery attempts, by id.
    fn delivery_attempts(
        &mut self,
        webhook: WebhookId,
        query: &DeliveryQuery,
    ) -> RepoResult<Vec<DeliveryAttempt>>;
}

/// Changes webhook subscriptions and records delivery attempts.
pub trait WebhookWriter: WebhookReader {
    /// Stores a new subscription, with its secret (needed to sign), and gives it an id.
    fn insert_webhook(
        &mut self,
        new: &NewWebhook,
        secret: &WebhookSecret,
        created_at: DateTime<Utc>,
        state: &DeliveryState,
    ) -> RepoResult<Webhook>;
    /// Removes a subscription and its delivery attempts.
    fn delete_webhook(&mut self, id: WebhookId) -> RepoResult<()>;
    /// Sets where a subscription's deliveries stand.
    fn set_delivery_state(&mut self, id: WebhookId, state: &DeliveryState) -> RepoResult<()>;
    /// Records a delivery attempt and gives it an id.
    fn insert_delivery_attempt(
        &mut self,
        attempt: &NewDeliveryAttempt,
    ) -> RepoResult<DeliveryAttempt>;
    /// Forgets a subscription's attempts but the latest `keep`.
    fn prune_delivery_attempts(&mut self, webhook: WebhookId, keep: u32) -> RepoResult<()>;
    /// Gives `holder` the subscription's delivery lease until `until`, if nobody else holds
    /// it at `now` (a lease held by `holder` itself is renewed). Returns whether it did.
    fn claim_webhook(
        &mut self,
        id: WebhookId,
        holder: &str,
        until: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> RepoResult<bool>;
    /// Moves `holder`'s lease on the subscription to end at `until`, if `holder` holds it,
    /// run out or not; unlike a claim, never takes a lease nobody holds. Returns whether it
    /// did.
    fn renew_webhook(
        &mut self,
        id: WebhookId,
        holder: &str,
        until: DateTime<Utc>,
    ) -> RepoResult<bool>;
    /// Ends `holder`'s lease on the subscription, if it holds it.
    fn release_webhook(&mut self, id: WebhookId, holder: &str) -> RepoResult<()>;
    /// Ends the subscription's lease, whoever holds it.
    fn revoke_webhook_lease(&mut self, id: WebhookId) -> RepoResult<()>;
}

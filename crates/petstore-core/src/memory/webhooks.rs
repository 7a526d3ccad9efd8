//! Webhook subscriptions and delivery attempts in memory.

use std::borrow::Borrow;

use super::{Catalogue, View};
use super::{next_id, page};
use crate::ids::{DeliveryId, WebhookId};
use crate::repository::{RepoResult, WebhookReader, WebhookWriter};
use crate::webhooks::{
    DeliveryAttempt, DeliveryQuery, DeliveryState, NewDeliveryAttempt, NewWebhook, Webhook,
    WebhookQuery, WebhookSecret, lease_is_free,
};
use chrono::{DateTime, Utc};

impl<C: Borrow<Catalogue>> WebhookReader for View<'_, C> {
    fn webhook(&mut self, id: WebhookId) -> RepoResult<Option<Webhook>> {
        Ok(self
            .catalogue
            .borrow()
            .webhooks
            .get(&id)
            .map(|w| w.0.clone()))
    }

    fn webhooks(&mut self, query: &WebhookQuery) -> RepoResult<Vec<Webhook>> {
        let catalogue = self.catalogue.borrow();
        let stored = page(&catalogue.webhooks, query.after, query.limit, |_| true);
        Ok(stored.into_iter().map(|w| w.0).collect())
    }

    fn webhook_secret(&mut self, id: WebhookId) -> RepoResult<Option<WebhookSecret>> {
        Ok(self
            .catalogue
            .borrow()
            .webhooks
            .get(&id)
            .map(|w| w.1.clone()))
    }

    fn delivery_attempts(
        &mut self,
        webhook: WebhookId,
        query: &DeliveryQuery,
    ) -> RepoResult<Vec<DeliveryAttempt>> {
        let catalogue = self.catalogue.borrow();
        let stored = page(&catalogue.deliveries, query.after, query.limit, |d| {
            d.0 == webhook
        });
        Ok(stored.into_iter().map(|d| d.1).collect())
    }
}

impl WebhookWriter for View<'_, Catalogue> {
    fn insert_webhook(
        &mut self,
        new: &NewWebhook,
        secret: &WebhookSecret,
        created_at: DateTime<Utc>,
        state: &DeliveryState,
    ) -> RepoResult<Webhook> {
        let id = next_id(&mut self.catalogue.last_webhook_id, WebhookId::new)?;
        let webhook = Webhook {
            id,
            url: new.url.clone(),
            events: new.events.clone(),
            created_at,
            delivery: *state,
        };
        self.catalogue
            .webhooks
            .insert(id, (webhook.clone(), secret.clone()));
        Ok(webhook)
    }

    fn delete_webhook(&mut self, id: WebhookId) -> RepoResult<()> {
        self.catalogue.webhooks.remove(&id);
        self.catalogue.deliveries.retain(|_, d| d.0 != id);
        self.catalogue.leases.remove(&id);
        Ok(())
    }

    fn set_delivery_state(&mut self, id: WebhookId, state: &DeliveryState) -> RepoResult<()> {
        let slot = self
            .catalogue
            .webhooks
            .get_mut(&id)
            .ok_or_else(|| Self::missing("webhook", id))?;
        slot.0.delivery = *state;
        Ok(())
    }

    fn insert_delivery_attempt(&mut self, new: &NewDeliveryAttempt) -> RepoResult<DeliveryAttempt> {
        if !self.catalogue.webhooks.contains_key(&new.webhook_id) {
            return Err(Self::missing("webhook", new.webhook_id));
        }
        let id = next_id(&mut self.catalogue.last_delivery_id, DeliveryId::new)?;
        let attempt = new.recorded(id);
        self.catalogue
            .deliveries
            .insert(id, (new.webhook_id, attempt.clone()));
        Ok(attempt)
    }

    fn prune_delivery_attempts(&mut self, webhook: WebhookId, keep: u32) -> RepoResult<()> {
        let deliveries = &mut self.catalogue.deliveries;
        let doomed: Vec<DeliveryId> = deliveries
            .iter()
            .rev()
            .filter(|(_, d)| d.0 == webhook)
            .skip(keep as usize)
            .map(|(id, _)| *id)
            .collect();
        for id in doomed {
            deliveries.remove(&id);
        }
        Ok(())
    }

    fn claim_webhook(
        &mut self,
        id: WebhookId,
        holder: &str,
        until: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> RepoResult<bool> {
        if !self.catalogue.webhooks.contains_key(&id) {
            return Ok(false);
        }
        let leases = &mut self.catalogue.leases;
        let lease = leases
            .get(&id)
            .map(|(current, expires)| (current.as_str(), *expires));
        let free = lease_is_free(lease, holder, now);
        if free {
            leases.insert(id, (holder.to_owned(), until));
        }
        Ok(free)
    }

    fn release_webhook(&mut self, id: WebhookId, holder: &str) -> RepoResult<()> {
        if self
            .catalogue
            .leases
            .get(&id)
            .is_some_and(|(current, _)| current == holder)
        {
            self.catalogue.leases.remove(&id);
        }
        Ok(())
    }

    fn renew_webhook(
        &mut self,
        id: WebhookId,
        holder: &str,
        until: DateTime<Utc>,
    ) -> RepoResult<bool> {
        match self.catalogue.leases.get_mut(&id) {
            Some((current, expires)) if current == holder => {
                *expires = until;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn revoke_webhook_lease(&mut self, id: WebhookId) -> RepoResult<()> {
        self.catalogue.leases.remove(&id);
        Ok(())
    }
}

//! Webhook subscriptions and their delivery attempts, in the `webhooks` and
//! `webhook_deliveries` tables.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use petstore_core::{
    DeliveryAttempt, DeliveryId, DeliveryQuery, DeliveryState, NewDeliveryAttempt, NewWebhook,
    RepoResult, Webhook, WebhookId, WebhookQuery, WebhookReader, WebhookSecret, WebhookWriter,
};

use super::{Tx, row_for_update};
use crate::error::QueryResultExt;
use crate::records::{DeliveryRecord, WebhookRecord, corrupt, cursor, event_type_list};
use crate::schema::sql_types::Time;
use crate::schema::{webhook_deliveries, webhooks};
use crate::statements::{convert, convert_one, exactly_one, probe};

impl WebhookReader for Tx<'_> {
    fn webhook(&mut self, id: WebhookId) -> RepoResult<Option<Webhook>> {
        // Recording an attempt or moving the cursor waits for any other change to it.
        let row = row_for_update!(
            self,
            webhooks::table
                .find(id.get())
                .select(WebhookRecord::as_select())
        )
        .or_storage()?;
        convert_one(row)
    }

    fn webhooks(&mut self, query: &WebhookQuery) -> RepoResult<Vec<Webhook>> {
        let rows = self
            .page(
                webhooks::table
                    .filter(webhooks::id.gt(query.after.map_or(0, WebhookId::get)))
                    .order(webhooks::id.asc())
                    .select(WebhookRecord::as_select()),
                probe(query.limit),
            )
            .or_storage()?;
        convert(rows)
    }

    fn webhook_secret(&mut self, id: WebhookId) -> RepoResult<Option<WebhookSecret>> {
        let text: Option<String> = webhooks::table
            .find(id.get())
            .select(webhooks::secret)
            .get_result(self.flushed())
            .optional()
            .or_storage()?;
        text.map(|text| WebhookSecret::parse(&text).map_err(corrupt("webhooks", id.get())))
            .transpose()
            .map_err(Into::into)
    }

    fn delivery_attempts(
        &mut self,
        webhook: WebhookId,
        query: &DeliveryQuery,
    ) -> RepoResult<Vec<DeliveryAttempt>> {
        let rows = self
            .page(
                webhook_deliveries::table
                    .filter(webhook_deliveries::webhook_id.eq(webhook.get()))
                    .filter(webhook_deliveries::id.gt(query.after.map_or(0, DeliveryId::get)))
                    .order(webhook_deliveries::id.asc())
                    .select(DeliveryRecord::as_select()),
                probe(query.limit),
            )
            .or_storage()?;
        convert(rows)
    }
}

impl WebhookWriter for Tx<'_> {
    fn insert_webhook(
        &mut self,
        new: &NewWebhook,
        secret: &WebhookSecret,
        created_at: DateTime<Utc>,
        state: &DeliveryState,
    ) -> RepoResult<Webhook> {
        let id: i64 = diesel::insert_into(webhooks::table)
            .values((
                webhooks::url.eq(new.url.as_str()),
                webhooks::event_types.eq(event_type_list(&new.events)),
                webhooks::secret.eq(secret.reveal()),
                webhooks::created_at.eq(Time(created_at)),
                webhooks::delivered_through.eq(cursor(state)),
                webhooks::failed_attempts.eq(i64::from(state.failed_attempts)),
                webhooks::next_attempt_at.eq(state.next_attempt_at.map(Time)),
                webhooks::delivered_events.eq(delivered_events(state)),
            ))
            .returning(webhooks::id)
            .get_result(self.flushed())
            .or_storage()?;
        Ok(Webhook {
            id: WebhookId::new(id).map_err(corrupt("webhooks", id))?,
            url: new.url.clone(),
            events: new.events.clone(),
            created_at,
            delivery: *state,
        })
    }

    fn delete_webhook(&mut self, id: WebhookId) -> RepoResult<()> {
        // The attempts go with it (ON DELETE CASCADE).
        diesel::delete(webhooks::table.find(id.get()))
            .execute(self.flushed())
            .or_storage()?;
        Ok(())
    }

    fn set_delivery_state(&mut self, id: WebhookId, state: &DeliveryState) -> RepoResult<()> {
        let affected = diesel::update(webhooks::table.find(id.get()))
            .set((
                webhooks::delivered_through.eq(cursor(state)),
                webhooks::failed_attempts.eq(i64::from(state.failed_attempts)),
                webhooks::next_attempt_at.eq(state.next_attempt_at.map(Time)),
                webhooks::delivered_events.eq(delivered_events(state)),
            ))
            .execute(self.flushed())
            .or_storage()?;
        exactly_one(affected, "webhook", id.get())
    }

    fn insert_delivery_attempt(&mut self, new: &NewDeliveryAttempt) -> RepoResult<DeliveryAttempt> {
        let id: i64 = diesel::insert_into(webhook_deliveries::table)
            .values((
                webhook_deliveries::webhook_id.eq(new.webhook_id.get()),
                webhook_deliveries::event_id.eq(new.event_id.get()),
                webhook_deliveries::event_type.eq(new.event_type.as_str()),
                webhook_deliveries::attempt.eq(i64::from(new.attempt)),
                webhook_deliveries::attempted_at.eq(Time(new.attempted_at)),
                webhook_deliveries::outcome.eq(new.outcome.as_str()),
                webhook_deliveries::status_code.eq(new.status_code.map(i32::from)),
                webhook_deliveries::error.eq(new.error.as_deref()),
                webhook_deliveries::next_attempt_at.eq(new.next_attempt_at.map(Time)),
            ))
            .returning(webhook_deliveries::id)
            .get_result(self.flushed())
            .or_storage()?;
        let id = DeliveryId::new(id).map_err(corrupt("webhook_deliveries", id))?;
        Ok(new.recorded(id))
    }

    fn prune_delivery_attempts(&mut self, webhook: WebhookId, keep: u32) -> RepoResult<()> {
        // The newest attempt that goes, if any: everything up to it goes with it.
        let boundary: Option<i64> = webhook_deliveries::table
            .filter(webhook_deliveries::webhook_id.eq(webhook.get()))
            .order(webhook_deliveries::id.desc())
            .offset(i64::from(keep))
            .select(webhook_deliveries::id)
            .first(self.flushed())
            .optional()
            .or_storage()?;
        if let Some(boundary) = boundary {
            diesel::delete(
                webhook_deliveries::table
                    .filter(webhook_deliveries::webhook_id.eq(webhook.get()))
                    .filter(webhook_deliveries::id.le(boundary)),
            )
            .execute(self.flushed())
            .or_storage()?;
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
        // One statement: of two nodes claiming at once, the row lock makes the second see the
        // first's lease and change nothing.
        let free = webhooks::leased_by
            .is_null()
            .or(webhooks::leased_by.eq(holder))
            .or(webhooks::leased_until.le(Time(now))); // petstore_core::lease_is_free, in SQL
        let claimed = diesel::update(webhooks::table.find(id.get()).filter(free))
            .set((
                webhooks::leased_by.eq(holder),
                webhooks::leased_until.eq(Time(until)),
            ))
            .execute(self.flushed())
            .or_storage()?;
        Ok(claimed == 1)
    }

    fn release_webhook(&mut self, id: WebhookId, holder: &str) -> RepoResult<()> {
        diesel::update(
            webhooks::table
                .find(id.get())
                .filter(webhooks::leased_by.eq(holder)),
        )
        .set(no_lease())
        .execute(self.flushed())
        .or_storage()?;
        Ok(())
    }

    fn renew_webhook(
        &mut self,
        id: WebhookId,
        holder: &str,
        until: DateTime<Utc>,
    ) -> RepoResult<bool> {
        let renewed = diesel::update(
            webhooks::table
                .find(id.get())
                .filter(webhooks::leased_by.eq(holder)),
        )
        .set(webhooks::leased_until.eq(Time(until)))
        .execute(self.flushed())
        .or_storage()?;
        Ok(renewed == 1)
    }

    fn revoke_webhook_lease(&mut self, id: WebhookId) -> RepoResult<()> {
        diesel::update(webhooks::table.find(id.get()))
            .set(no_lease())
            .execute(self.flushed())
            .or_storage()?;
        Ok(())
    }
}

/// The count of deliveries as stored: a BIGINT, which no count reaches the end of.
fn delivered_events(state: &DeliveryState) -> i64 {
    i64::try_from(state.delivered_events).unwrap_or(i64::MAX)
}

/// A subscription's lease columns, set to "nobody holds it".
fn no_lease() -> (
    diesel::dsl::Eq<webhooks::leased_by, Option<String>>,
    diesel::dsl::Eq<webhooks::leased_until, Option<Time>>,
) {
    (
        webhooks::leased_by.eq(None),
        webhooks::leased_until.eq(None),
    )
}

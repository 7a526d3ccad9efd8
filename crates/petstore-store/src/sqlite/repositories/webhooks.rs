//! Webhook subscriptions and their delivery attempts, in the `webhooks` and
//! `webhook_deliveries` tables.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sqlite::Sqlite;
use petstore_core::{
    DeliveryAttempt, DeliveryId, DeliveryQuery, DeliveryState, NewDeliveryAttempt, NewWebhook,
    RepoResult, Webhook, WebhookId, WebhookQuery, WebhookReader, WebhookSecret, WebhookWriter,
    lease_is_free,
};

use super::SqliteTx;
use crate::error::{QueryResultExt, StoreError};
use crate::records::{DeliveryRecord, WebhookRecord, corrupt, cursor, event_type_list};
use crate::sqlite::limit::limited;
use crate::sqlite::rows::{format_time, parse_optional_time, parse_time};
use crate::sqlite::schema::{webhook_deliveries, webhooks};
use crate::statements::{convert, convert_one, exactly_one, probe};

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = webhooks, check_for_backend(Sqlite))]
pub(crate) struct WebhookRow {
    id: i64,
    url: String,
    event_types: String,
    created_at: String,
    delivered_through: i64,
    failed_attempts: i64,
    next_attempt_at: Option<String>,
}

impl TryFrom<WebhookRow> for Webhook {
    type Error = StoreError;

    fn try_from(row: WebhookRow) -> Result<Self, StoreError> {
        Webhook::try_from(WebhookRecord {
            created_at: parse_time("webhooks", row.id, &row.created_at)?,
            next_attempt_at: parse_optional_time(
                "webhooks",
                row.id,
                row.next_attempt_at.as_deref(),
            )?,
            id: row.id,
            url: row.url,
            event_types: row.event_types,
            delivered_through: row.delivered_through,
            failed_attempts: row.failed_attempts,
        })
    }
}

#[derive(Debug, Insertable)]
#[diesel(table_name = webhooks)]
struct NewWebhookRow<'a> {
    url: &'a str,
    event_types: String,
    secret: &'a str,
    created_at: String,
    delivered_through: i64,
    failed_attempts: i64,
    next_attempt_at: Option<String>,
}

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = webhook_deliveries, check_for_backend(Sqlite))]
pub(crate) struct DeliveryRow {
    id: i64,
    event_id: i64,
    event_type: String,
    attempt: i64,
    attempted_at: String,
    outcome: String,
    status_code: Option<i32>,
    error: Option<String>,
    next_attempt_at: Option<String>,
}

impl TryFrom<DeliveryRow> for DeliveryAttempt {
    type Error = StoreError;

    fn try_from(row: DeliveryRow) -> Result<Self, StoreError> {
        let table = "webhook_deliveries";
        DeliveryAttempt::try_from(DeliveryRecord {
            attempted_at: parse_time(table, row.id, &row.attempted_at)?,
            next_attempt_at: parse_optional_time(table, row.id, row.next_attempt_at.as_deref())?,
            id: row.id,
            event_id: row.event_id,
            event_type: row.event_type,
            attempt: row.attempt,
            outcome: row.outcome,
            status_code: row.status_code,
            error: row.error,
        })
    }
}

#[derive(Debug, Insertable)]
#[diesel(table_name = webhook_deliveries)]
struct NewDeliveryRow<'a> {
    webhook_id: i64,
    event_id: i64,
    event_type: &'static str,
    attempt: i64,
    attempted_at: String,
    outcome: &'static str,
    status_code: Option<i32>,
    error: Option<&'a str>,
    next_attempt_at: Option<String>,
}

impl WebhookReader for SqliteTx<'_> {
    fn webhook(&mut self, id: WebhookId) -> RepoResult<Option<Webhook>> {
        let row = webhooks::table
            .find(id.get())
            .select(WebhookRow::as_select())
            .get_result(self.conn)
            .optional()
            .or_storage()?;
        convert_one(row)
    }

    fn webhooks(&mut self, query: &WebhookQuery) -> RepoResult<Vec<Webhook>> {
        let rows = limited(
            webhooks::table
                .filter(webhooks::id.gt(query.after.map_or(0, WebhookId::get)))
                .order(webhooks::id.asc())
                .select(WebhookRow::as_select()),
            probe(query.limit),
        )
        .load(self.conn)
        .or_storage()?;
        convert(rows)
    }

    fn webhook_secret(&mut self, id: WebhookId) -> RepoResult<Option<WebhookSecret>> {
        let text: Option<String> = webhooks::table
            .find(id.get())
            .select(webhooks::secret)
            .get_result(self.conn)
            .optional()
            .or_storage()?;
        text.map(|text| WebhookSecret::parse(&text).map_err(corrupt("webhooks", id.get())))
            .transpose()
            .map_err(Into::into)
    }

    fn webhooks_due(&mut self, now: DateTime<Utc>) -> RepoResult<Vec<Webhook>> {
        // Subscriptions are few (an admin makes each); the times are compared as times, not
        // as text, whose fraction digits vary.
        let rows = webhooks::table
            .order(webhooks::id.asc())
            .select(WebhookRow::as_select())
            .load(self.conn)
            .or_storage()?;
        let webhooks: Vec<Webhook> = convert(rows)?;
        Ok(webhooks
            .into_iter()
            .filter(|w| w.delivery.is_due(now))
            .collect())
    }

    fn delivery_attempts(
        &mut self,
        webhook: WebhookId,
        query: &DeliveryQuery,
    ) -> RepoResult<Vec<DeliveryAttempt>> {
        let rows = limited(
            webhook_deliveries::table
                .filter(webhook_deliveries::webhook_id.eq(webhook.get()))
                .filter(webhook_deliveries::id.gt(query.after.map_or(0, DeliveryId::get)))
                .order(webhook_deliveries::id.asc())
                .select(DeliveryRow::as_select()),
            probe(query.limit),
        )
        .load(self.conn)
        .or_storage()?;
        convert(rows)
    }
}

impl WebhookWriter for SqliteTx<'_> {
    fn insert_webhook(
        &mut self,
        new: &NewWebhook,
        secret: &WebhookSecret,
        created_at: DateTime<Utc>,
        state: &DeliveryState,
    ) -> RepoResult<Webhook> {
        let row = NewWebhookRow {
            url: new.url.as_str(),
            event_types: event_type_list(&new.events),
            secret: secret.reveal(),
            created_at: format_time(created_at),
            delivered_through: cursor(state),
            failed_attempts: i64::from(state.failed_attempts),
            next_attempt_at: state.next_attempt_at.map(format_time),
        };
        let id: i64 = diesel::insert_into(webhooks::table)
            .values(&row)
            .returning(webhooks::id)
            .get_result(self.conn)
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
            .execute(self.conn)
            .or_storage()?;
        Ok(())
    }

    fn set_delivery_state(&mut self, id: WebhookId, state: &DeliveryState) -> RepoResult<()> {
        let affected = diesel::update(webhooks::table.find(id.get()))
            .set((
                webhooks::delivered_through.eq(cursor(state)),
                webhooks::failed_attempts.eq(i64::from(state.failed_attempts)),
                webhooks::next_attempt_at.eq(state.next_attempt_at.map(format_time)),
            ))
            .execute(self.conn)
            .or_storage()?;
        exactly_one(affected, "webhook", id.get())
    }

    fn insert_delivery_attempt(&mut self, new: &NewDeliveryAttempt) -> RepoResult<DeliveryAttempt> {
        let row = NewDeliveryRow {
            webhook_id: new.webhook_id.get(),
            event_id: new.event_id.get(),
            event_type: new.event_type.as_str(),
            attempt: i64::from(new.attempt),
            attempted_at: format_time(new.attempted_at),
            outcome: new.outcome.as_str(),
            status_code: new.status_code.map(i32::from),
            error: new.error.as_deref(),
            next_attempt_at: new.next_attempt_at.map(format_time),
        };
        let id: i64 = diesel::insert_into(webhook_deliveries::table)
            .values(&row)
            .returning(webhook_deliveries::id)
            .get_result(self.conn)
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
            .first(self.conn)
            .optional()
            .or_storage()?;
        if let Some(boundary) = boundary {
            diesel::delete(
                webhook_deliveries::table
                    .filter(webhook_deliveries::webhook_id.eq(webhook.get()))
                    .filter(webhook_deliveries::id.le(boundary)),
            )
            .execute(self.conn)
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
        // Write transactions are serialised on SQLite: reading, deciding and writing cannot
        // interleave with another claim. Times are compared as times, not as text.
        let lease: Option<(Option<String>, Option<String>)> = webhooks::table
            .find(id.get())
            .select((webhooks::leased_by, webhooks::leased_until))
            .get_result(self.conn)
            .optional()
            .or_storage()?;
        let Some((current, expires)) = lease else {
            return Ok(false);
        };
        let expires = parse_optional_time("webhooks", id.get(), expires.as_deref())?;
        let free = lease_is_free(current.as_deref().zip(expires), holder, now);
        if free {
            diesel::update(webhooks::table.find(id.get()))
                .set((
                    webhooks::leased_by.eq(holder),
                    webhooks::leased_until.eq(format_time(until)),
                ))
                .execute(self.conn)
                .or_storage()?;
        }
        Ok(free)
    }

    fn release_webhook(&mut self, id: WebhookId, holder: &str) -> RepoResult<()> {
        diesel::update(
            webhooks::table
                .find(id.get())
                .filter(webhooks::leased_by.eq(holder)),
        )
        .set((
            webhooks::leased_by.eq(None::<String>),
            webhooks::leased_until.eq(None::<String>),
        ))
        .execute(self.conn)
        .or_storage()?;
        Ok(())
    }
}

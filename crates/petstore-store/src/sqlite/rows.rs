//! Rows as SQLite stores them (times as RFC 3339 text, JSON as text), converted into the typed
//! records of `records.rs`, which turn them into domain values.

use chrono::{DateTime, SecondsFormat, Utc};
use diesel::prelude::*;
use diesel::sqlite::Sqlite;
use petstore_core::{ApiKey, Event, IdempotencyRecord, InventoryItem, Order, Pet, StoredKey};

use crate::error::StoreError;
use crate::records::{self, EventRecord, KeyRecord, OrderRecord, StatusText};
use crate::sqlite::schema::{api_keys, categories, events, idempotency_records, orders, pets};

/// Timestamps are stored as RFC 3339 text in UTC, with as many fraction digits as needed.
pub(crate) fn format_time(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

pub(crate) fn parse_optional_time(
    table: &'static str,
    id: i64,
    text: Option<&str>,
) -> Result<Option<DateTime<Utc>>, StoreError> {
    text.map(|text| parse_time(table, id, text)).transpose()
}

pub(crate) fn parse_time(
    table: &'static str,
    id: i64,
    text: &str,
) -> Result<DateTime<Utc>, StoreError> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| StoreError::Corrupt(format!("{table} row {id}: bad time {text:?}: {e}")))
}

/// A category's columns, in `CategoryRecord`'s field order: SQLite stores them in the same
/// types as PostgreSQL, so they load straight into the shared record.
pub(crate) const CATEGORY_COLUMNS: (categories::id, categories::name, categories::description) =
    (categories::id, categories::name, categories::description);

/// The columns of a pet, in `PetRow`'s order. Each read takes only the columns it answers
/// with: decoding a column costs about as much as SQLite's reading it (docs/performance.md).
pub(crate) const PET_COLUMNS: (pets::id, pets::name, pets::category_id, pets::status) =
    (pets::id, pets::name, pets::category_id, pets::status);

/// The columns of a pet's inventory entry, in `StockRow`'s order.
pub(crate) const STOCK_COLUMNS: (pets::id, pets::status, pets::stock) =
    (pets::id, pets::status, pets::stock);

/// A pet, as [`PET_COLUMNS`] read it.
#[derive(Debug, Queryable)]
pub(crate) struct PetRow {
    id: i64,
    name: String,
    category_id: i64,
    status: StatusText,
}

impl PetRow {
    pub(crate) fn into_pet(self) -> Result<Pet, StoreError> {
        records::pet(self.id, self.name, self.category_id, self.status)
    }
}

/// A pet's inventory entry, as [`STOCK_COLUMNS`] read it.
#[derive(Debug, Queryable)]
pub(crate) struct StockRow {
    id: i64,
    status: StatusText,
    stock: i64,
}

impl StockRow {
    pub(crate) fn into_item(self) -> Result<InventoryItem, StoreError> {
        records::inventory_item(self.id, self.status, self.stock)
    }
}

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = orders, check_for_backend(Sqlite))]
pub(crate) struct OrderRow {
    id: i64,
    pet_id: i64,
    quantity: i64,
    ship_date: Option<String>,
    complete: bool,
    owner_id: Option<i64>,
}

impl TryFrom<OrderRow> for Order {
    type Error = StoreError;

    fn try_from(row: OrderRow) -> Result<Self, StoreError> {
        Order::try_from(OrderRecord {
            id: row.id,
            pet_id: row.pet_id,
            quantity: row.quantity,
            ship_date: parse_optional_time("orders", row.id, row.ship_date.as_deref())?,
            complete: row.complete,
            owner_id: row.owner_id,
        })
    }
}

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = events, check_for_backend(Sqlite))]
pub(crate) struct EventRow {
    id: i64,
    time: String,
    event_type: String,
    subject: String,
    data: String,
    traceparent: Option<String>,
}

impl TryFrom<EventRow> for Event {
    type Error = StoreError;

    fn try_from(row: EventRow) -> Result<Self, StoreError> {
        Event::try_from(EventRecord {
            id: row.id,
            time: parse_time("events", row.id, &row.time)?,
            event_type: row.event_type,
            subject: row.subject,
            data: serde_json::from_str(&row.data)
                .map_err(|e| StoreError::Corrupt(format!("events row {}: {e}", row.id)))?,
            traceparent: row.traceparent,
        })
    }
}

#[derive(Debug, Insertable, AsChangeset)]
#[diesel(table_name = categories, treat_none_as_null = true)]
pub(crate) struct CategoryValues<'a> {
    pub(crate) name: &'a str,
    pub(crate) name_key: String,
    pub(crate) description: Option<&'a str>,
}

#[derive(Debug, Insertable, AsChangeset)]
#[diesel(table_name = pets)]
pub(crate) struct PetValues<'a> {
    pub(crate) name: &'a str,
    pub(crate) name_key: String,
    pub(crate) category_id: i64,
    pub(crate) status: &'static str,
}

#[derive(Debug, Insertable)]
#[diesel(table_name = orders)]
pub(crate) struct NewOrderRow {
    pub(crate) pet_id: i64,
    pub(crate) quantity: i64,
    pub(crate) ship_date: Option<String>,
    pub(crate) complete: bool,
    pub(crate) owner_id: Option<i64>,
}

// No trace binds NULL: the statement's text is then the same for every row, and cached.
#[derive(Debug, Insertable)]
#[diesel(table_name = events, treat_none_as_default_value = false)]
pub(crate) struct NewEventRow<'a> {
    pub(crate) time: &'a str,
    pub(crate) event_type: &'static str,
    pub(crate) subject: String,
    pub(crate) data: String,
    pub(crate) traceparent: Option<&'a str>,
}

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = api_keys, check_for_backend(Sqlite))]
pub(crate) struct KeyRow {
    id: i64,
    name: String,
    role: String,
    prefix: String,
    hash: Vec<u8>,
    created_at: String,
    revoked_at: Option<String>,
}

impl TryFrom<KeyRow> for StoredKey {
    type Error = StoreError;

    fn try_from(row: KeyRow) -> Result<Self, StoreError> {
        StoredKey::try_from(KeyRecord {
            id: row.id,
            created_at: parse_time("api_keys", row.id, &row.created_at)?,
            revoked_at: parse_optional_time("api_keys", row.id, row.revoked_at.as_deref())?,
            name: row.name,
            role: row.role,
            prefix: row.prefix,
            hash: row.hash,
        })
    }
}

impl TryFrom<KeyRow> for ApiKey {
    type Error = StoreError;

    fn try_from(row: KeyRow) -> Result<Self, StoreError> {
        StoredKey::try_from(row).map(|stored| stored.key)
    }
}

#[derive(Debug, Insertable)]
#[diesel(table_name = api_keys)]
pub(crate) struct NewKeyRow<'a> {
    pub(crate) name: &'a str,
    pub(crate) role: &'static str,
    pub(crate) prefix: &'a str,
    pub(crate) hash: &'a [u8],
    pub(crate) created_at: String,
}

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = idempotency_records, check_for_backend(Sqlite))]
pub(crate) struct IdempotencyRow {
    fingerprint: Vec<u8>,
    response: Vec<u8>,
    recorded_at: String,
}

impl TryFrom<IdempotencyRow> for IdempotencyRecord {
    type Error = StoreError;

    fn try_from(row: IdempotencyRow) -> Result<Self, StoreError> {
        IdempotencyRecord::try_from(records::IdempotencyRow {
            recorded_at: parse_time("idempotency_records", 0, &row.recorded_at)?,
            fingerprint: row.fingerprint,
            response: row.response,
        })
    }
}

#[derive(Debug, Insertable)]
#[diesel(table_name = idempotency_records)]
pub(crate) struct NewIdempotencyRow<'a> {
    pub(crate) owner_id: i64,
    pub(crate) idempotency_key: &'a str,
    pub(crate) fingerprint: &'a [u8],
    pub(crate) response: &'a [u8],
    pub(crate) recorded_at: String,
}

//! Rows as stored, and their conversion to domain values.
//!
//! Reading a row parses it back into validated domain types, so a value that breaks a rule
//! (written by hand, or by an older bug) is reported as corrupt instead of served.

use chrono::{DateTime, SecondsFormat, Utc};
use diesel::prelude::*;
use diesel::sqlite::Sqlite;
use petstore_core::{
    ApiKey, Category, CategoryId, Description, Event, EventId, EventType, InventoryItem, KeyId,
    Name, Order, OrderId, OwnerId, Pet, PetId, PetStatus, Quantity, Role, Stock, StoredKey,
    ValidationError,
};

use petstore_core::IdempotencyRecord;

use crate::error::StoreError;
use crate::sqlite::schema::{api_keys, categories, events, idempotency_records, orders, pets};

pub(crate) fn corrupt(table: &'static str, id: i64) -> impl Fn(ValidationError) -> StoreError {
    move |error| StoreError::Corrupt(format!("{table} row {id}: {error}"))
}

/// Timestamps are stored as RFC 3339 text in UTC, with as many fraction digits as needed.
pub(crate) fn format_time(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::AutoSi, true)
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

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = categories, check_for_backend(Sqlite))]
pub(crate) struct CategoryRow {
    id: i64,
    name: String,
    description: Option<String>,
}

impl TryFrom<CategoryRow> for Category {
    type Error = StoreError;

    fn try_from(row: CategoryRow) -> Result<Self, StoreError> {
        let bad = corrupt("categories", row.id);
        Ok(Category {
            id: CategoryId::new(row.id).map_err(&bad)?,
            name: Name::parse(&row.name).map_err(&bad)?,
            description: row
                .description
                .as_deref()
                .map(Description::parse)
                .transpose()
                .map_err(&bad)?,
        })
    }
}

/// A pet row; the stock column is the pet's inventory entry.
#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = pets, check_for_backend(Sqlite))]
pub(crate) struct PetRow {
    id: i64,
    name: String,
    category_id: i64,
    status: String,
    stock: i64,
}

impl PetRow {
    pub(crate) fn pet(&self) -> Result<Pet, StoreError> {
        let bad = corrupt("pets", self.id);
        Ok(Pet {
            id: PetId::new(self.id).map_err(&bad)?,
            name: Name::parse(&self.name).map_err(&bad)?,
            category_id: CategoryId::new(self.category_id).map_err(&bad)?,
            status: self.status.parse::<PetStatus>().map_err(&bad)?,
        })
    }

    pub(crate) fn inventory_item(&self) -> Result<InventoryItem, StoreError> {
        let bad = corrupt("pets", self.id);
        let stock = u32::try_from(self.stock).map_err(|_| {
            StoreError::Corrupt(format!("pets row {}: stock {}", self.id, self.stock))
        })?;
        Ok(InventoryItem {
            pet_id: PetId::new(self.id).map_err(&bad)?,
            quantity: Stock::from_level(stock),
            status: self.status.parse::<PetStatus>().map_err(&bad)?,
        })
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
        let bad = corrupt("orders", row.id);
        Ok(Order {
            id: OrderId::new(row.id).map_err(&bad)?,
            pet_id: PetId::new(row.pet_id).map_err(&bad)?,
            quantity: Quantity::new(row.quantity).map_err(&bad)?,
            ship_date: row
                .ship_date
                .as_deref()
                .map(|text| parse_time("orders", row.id, text))
                .transpose()?,
            complete: row.complete,
            owner: row.owner_id.map(OwnerId::new).transpose().map_err(&bad)?,
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
}

impl TryFrom<EventRow> for Event {
    type Error = StoreError;

    fn try_from(row: EventRow) -> Result<Self, StoreError> {
        let bad = corrupt("events", row.id);
        Ok(Event {
            id: EventId::new(row.id).map_err(&bad)?,
            time: parse_time("events", row.id, &row.time)?,
            event_type: row.event_type.parse::<EventType>().map_err(&bad)?,
            subject: row.subject,
            data: serde_json::from_str(&row.data)
                .map_err(|e| StoreError::Corrupt(format!("events row {}: {e}", row.id)))?,
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

#[derive(Debug, Insertable)]
#[diesel(table_name = events)]
pub(crate) struct NewEventRow<'a> {
    pub(crate) time: &'a str,
    pub(crate) event_type: &'static str,
    pub(crate) subject: String,
    pub(crate) data: String,
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
        let bad = corrupt("api_keys", row.id);
        let hash: [u8; 32] =
            row.hash.as_slice().try_into().map_err(|_| {
                StoreError::Corrupt(format!("api_keys row {}: hash length", row.id))
            })?;
        Ok(StoredKey {
            key: ApiKey {
                id: KeyId::new(row.id).map_err(&bad)?,
                name: Name::parse(&row.name).map_err(&bad)?,
                role: row.role.parse::<Role>().map_err(&bad)?,
                prefix: row.prefix,
                created_at: parse_time("api_keys", row.id, &row.created_at)?,
                revoked_at: row
                    .revoked_at
                    .as_deref()
                    .map(|text| parse_time("api_keys", row.id, text))
                    .transpose()?,
            },
            hash,
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
        let bad = |what: &str| StoreError::Corrupt(format!("idempotency record: {what}"));
        Ok(IdempotencyRecord {
            fingerprint: row
                .fingerprint
                .as_slice()
                .try_into()
                .map_err(|_| bad("fingerprint"))?,
            response: row.response,
            recorded_at: parse_time("idempotency_records", 0, &row.recorded_at)?,
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

//! Rows in typed form, and their one conversion into domain values.
//!
//! Reading a row parses it back into validated domain types, so a value that breaks a rule
//! (written by hand, or by an older bug) is reported as corrupt instead of served. Both
//! backends read these records: their columns have the same types (`schema.rs`). Each is a
//! `Selectable` set of columns, so a read names the columns by the record it loads, and a
//! field added to a record is a compile error wherever its conversion forgets it.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use petstore_core::{
    Amount, ApiKey, Category, CategoryId, Currency, Description, IdempotencyRecord, InventoryItem,
    KeyId, Name, NewOrder, Order, OrderId, OrderLine, OwnerId, Pet, PetId, PetStatus, Price,
    PricedLine, Quantity, Role, Stock, StoredKey, ValidationError,
};

use crate::error::StoreError;
use crate::schema::{api_keys, categories, idempotency_records, order_lines, orders, pets};

mod events;
mod holds;
mod ledger;
mod webhooks;

pub(crate) use events::{EventColumns, EventRecord, actor_column};
pub(crate) use holds::{HoldLineRecord, HoldRecord};
pub(crate) use ledger::{MovementColumns, MovementRecord};
pub(crate) use webhooks::{DeliveryRecord, WebhookRecord, cursor, event_type_list};

/// The error for a row of `table` that breaks a domain rule.
pub(crate) fn corrupt(table: &'static str, id: i64) -> impl Fn(ValidationError) -> StoreError {
    move |error| StoreError::Corrupt(format!("{table} row {id}: {error}"))
}

fn out_of_range(table: &'static str, id: i64, column: &str) -> StoreError {
    StoreError::Corrupt(format!("{table} row {id}: {column} is out of range"))
}

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = categories, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct CategoryRecord {
    pub(crate) id: i64,
    pub(crate) name: String,
    pub(crate) description: Option<String>,
}

impl TryFrom<CategoryRecord> for Category {
    type Error = StoreError;

    fn try_from(row: CategoryRecord) -> Result<Self, StoreError> {
        let bad = corrupt("categories", row.id);
        Ok(Category {
            id: CategoryId::new(row.id).map_err(&bad)?,
            name: Name::try_from(row.name).map_err(&bad)?,
            description: row
                .description
                .as_deref()
                .map(Description::parse)
                .transpose()
                .map_err(&bad)?,
        })
    }
}

/// A pet's columns, without its stock: what a pet's answer needs. Each read takes only the
/// columns it answers with: decoding a column costs about as much as SQLite's reading it
/// (docs/performance.md).
#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = pets, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct PetRecord {
    pub(crate) id: i64,
    pub(crate) name: String,
    pub(crate) category_id: i64,
    pub(crate) status: StatusText,
    pub(crate) price_amount: Option<i64>,
    pub(crate) price_currency: Option<CurrencyText>,
}

/// A pet's whole row: the pet, its stock and its open orders, read at once (a use case that
/// reads the pet decides on the other two next).
#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = pets, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct PetRowRecord {
    #[diesel(embed)]
    pub(crate) pet: PetRecord,
    pub(crate) stock: i64,
    pub(crate) open_orders: i64,
    pub(crate) committed: i64,
    pub(crate) held: i64,
}

/// A pet's row as the domain sees it: the pet, its inventory entry, its open orders and the
/// units they hold.
#[derive(Debug, Clone)]
pub(crate) struct PetRowValues {
    pub(crate) pet: Pet,
    pub(crate) stock: InventoryItem,
    pub(crate) open_orders: u64,
    pub(crate) committed: Stock,
}

impl TryFrom<PetRowRecord> for PetRowValues {
    type Error = StoreError;

    fn try_from(row: PetRowRecord) -> Result<Self, StoreError> {
        let pet = Pet::try_from(row.pet)?;
        let stock = InventoryItem::try_from(StockRecord {
            id: pet.id.get(),
            status: StatusText::from(pet.status),
            stock: row.stock,
            held: row.held,
            committed: row.committed,
        })?;
        Ok(Self {
            pet,
            committed: stock.committed,
            stock,
            open_orders: row.open_orders.unsigned_abs(),
        })
    }
}

/// A pet's inventory entry: its id, status, stock and the units held and in open orders.
#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = pets, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct StockRecord {
    pub(crate) id: i64,
    pub(crate) status: StatusText,
    pub(crate) stock: i64,
    pub(crate) held: i64,
    pub(crate) committed: i64,
}

/// A text column parsed where the row is decoded: from the text SQLite or PostgreSQL hands
/// over, without an owned copy of it (a list reads one per row). Text that does not parse
/// stays an error until the row is converted, where it is reported with the row.
#[derive(Debug, diesel::deserialize::FromSqlRow)]
pub(crate) struct Parsed<T>(Result<T, ValidationError>);

/// A pet's status column.
pub(crate) type StatusText = Parsed<PetStatus>;
/// A price's currency column.
pub(crate) type CurrencyText = Parsed<Currency>;

impl<T> From<T> for Parsed<T> {
    fn from(value: T) -> Self {
        Self(Ok(value))
    }
}

impl<T> diesel::deserialize::FromSql<diesel::sql_types::Text, diesel::sqlite::Sqlite> for Parsed<T>
where
    T: std::str::FromStr<Err = ValidationError>,
{
    fn from_sql(
        mut value: diesel::sqlite::SqliteValue<'_, '_, '_>,
    ) -> diesel::deserialize::Result<Self> {
        Ok(Self(value.read_text().parse()))
    }
}

impl<T> diesel::deserialize::FromSql<diesel::sql_types::Text, diesel::pg::Pg> for Parsed<T>
where
    T: std::str::FromStr<Err = ValidationError>,
{
    fn from_sql(value: diesel::pg::PgValue<'_>) -> diesel::deserialize::Result<Self> {
        Ok(Self(std::str::from_utf8(value.as_bytes())?.parse()))
    }
}

impl TryFrom<PetRecord> for Pet {
    type Error = StoreError;

    fn try_from(row: PetRecord) -> Result<Self, StoreError> {
        let PetRecord {
            id,
            name,
            category_id,
            status,
            price_amount,
            price_currency,
        } = row;
        let bad = corrupt("pets", id);
        let price = price_columns("pets", id, price_amount, price_currency)?;
        Ok(Pet {
            id: PetId::new(id).map_err(&bad)?,
            name: Name::try_from(name).map_err(&bad)?,
            category_id: CategoryId::new(category_id).map_err(&bad)?,
            status: status.0.map_err(&bad)?,
            price,
        })
    }
}

/// A price from its two columns in row `id` of `table`: both or neither.
fn price_columns(
    table: &'static str,
    id: i64,
    amount: Option<i64>,
    currency: Option<CurrencyText>,
) -> Result<Option<Price>, StoreError> {
    let bad = corrupt(table, id);
    match (amount, currency) {
        (Some(amount), Some(currency)) => Ok(Some(Price {
            amount: Amount::new(amount).map_err(&bad)?,
            currency: currency.0.map_err(&bad)?,
        })),
        (None, None) => Ok(None),
        _ => Err(StoreError::Corrupt(format!(
            "{table} row {id}: an amount without its currency, or the reverse"
        ))),
    }
}

impl TryFrom<StockRecord> for InventoryItem {
    type Error = StoreError;

    fn try_from(row: StockRecord) -> Result<Self, StoreError> {
        let StockRecord {
            id,
            status,
            stock,
            held,
            committed,
        } = row;
        let bad = corrupt("pets", id);
        let units = |value: i64, column| {
            u32::try_from(value)
                .map(Stock::from_level)
                .map_err(|_| out_of_range("pets", id, column))
        };
        Ok(InventoryItem {
            pet_id: PetId::new(id).map_err(&bad)?,
            quantity: units(stock, "stock")?,
            status: status.0.map_err(&bad)?,
            held: units(held, "held")?,
            committed: units(committed, "committed")?,
        })
    }
}

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = orders, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct OrderRecord {
    pub(crate) id: i64,
    pub(crate) pet_id: i64,
    pub(crate) quantity: i64,
    pub(crate) ship_date: Option<DateTime<Utc>>,
    pub(crate) complete: bool,
    pub(crate) owner_id: Option<i64>,
    pub(crate) unit_amount: Option<i64>,
    pub(crate) currency: Option<CurrencyText>,
    pub(crate) line_count: i64,
}

impl TryFrom<OrderRecord> for Order {
    type Error = StoreError;

    fn try_from(row: OrderRecord) -> Result<Self, StoreError> {
        let OrderRecord {
            id,
            pet_id,
            quantity,
            ship_date,
            complete,
            owner_id,
            unit_amount,
            currency,
            // Lines 2 and on are read beside the row (`OrderLineRecord`).
            line_count: _,
        } = row;
        let bad = corrupt("orders", id);
        let placed = NewOrder {
            pet_id: PetId::new(pet_id).map_err(&bad)?,
            quantity: Quantity::new(quantity).map_err(&bad)?,
            ship_date,
        };
        let owner = owner_id.map(OwnerId::new).transpose().map_err(&bad)?;
        let price = price_columns("orders", id, unit_amount, currency)?;
        Ok(Order {
            complete,
            ..placed.into_order(OrderId::new(id).map_err(&bad)?, owner, price)
        })
    }
}

/// Line 2 or later of an order.
#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = order_lines, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct OrderLineRecord {
    pub(crate) order_id: i64,
    pub(crate) line_no: i64,
    pub(crate) pet_id: i64,
    pub(crate) quantity: i64,
    pub(crate) unit_amount: Option<i64>,
    pub(crate) currency: Option<CurrencyText>,
}

impl TryFrom<OrderLineRecord> for OrderLine {
    type Error = StoreError;

    fn try_from(row: OrderLineRecord) -> Result<Self, StoreError> {
        let OrderLineRecord {
            order_id,
            line_no,
            pet_id,
            quantity,
            unit_amount,
            currency,
        } = row;
        let bad = corrupt("order_lines", order_id);
        let line = PricedLine {
            pet_id: PetId::new(pet_id).map_err(&bad)?,
            quantity: Quantity::new(quantity).map_err(&bad)?,
            price: price_columns("order_lines", order_id, unit_amount, currency)?,
        };
        let line_no =
            u16::try_from(line_no).map_err(|_| out_of_range("order_lines", order_id, "line_no"))?;
        Ok(line.numbered(line_no))
    }
}

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = api_keys, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct KeyRecord {
    pub(crate) id: i64,
    pub(crate) name: String,
    pub(crate) role: String,
    pub(crate) prefix: String,
    pub(crate) hash: Vec<u8>,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) revoked_at: Option<DateTime<Utc>>,
}

impl TryFrom<KeyRecord> for StoredKey {
    type Error = StoreError;

    fn try_from(row: KeyRecord) -> Result<Self, StoreError> {
        let bad = corrupt("api_keys", row.id);
        let hash: [u8; 32] = row
            .hash
            .as_slice()
            .try_into()
            .map_err(|_| out_of_range("api_keys", row.id, "hash"))?;
        Ok(StoredKey {
            key: ApiKey {
                id: KeyId::new(row.id).map_err(&bad)?,
                name: Name::parse(&row.name).map_err(&bad)?,
                role: row.role.parse::<Role>().map_err(&bad)?,
                prefix: row.prefix,
                created_at: row.created_at,
                revoked_at: row.revoked_at,
            },
            hash,
        })
    }
}

impl TryFrom<KeyRecord> for ApiKey {
    type Error = StoreError;

    fn try_from(row: KeyRecord) -> Result<Self, StoreError> {
        StoredKey::try_from(row).map(|stored| stored.key)
    }
}

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = idempotency_records, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct IdempotencyRow {
    pub(crate) fingerprint: Vec<u8>,
    pub(crate) response: Vec<u8>,
    pub(crate) recorded_at: DateTime<Utc>,
}

impl TryFrom<IdempotencyRow> for IdempotencyRecord {
    type Error = StoreError;

    fn try_from(row: IdempotencyRow) -> Result<Self, StoreError> {
        Ok(IdempotencyRecord {
            fingerprint: row
                .fingerprint
                .as_slice()
                .try_into()
                .map_err(|_| out_of_range("idempotency_records", 0, "fingerprint"))?,
            response: row.response,
            recorded_at: row.recorded_at,
        })
    }
}

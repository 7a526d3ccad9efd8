//! Every table the service keeps, as whole rows that read from either backend and write to
//! either: what a copy moves. The rows are the columns as stored; no domain type reads them,
//! so a copy keeps exactly what it found.

use diesel::prelude::*;

use super::conn::{Conn, on_backend};
use crate::schema::sql_types::{Json, Time};
use crate::schema::{
    api_keys, categories, events, hold_lines, holds, idempotency_records, order_lines, orders,
    pets, shop, stock_movements, webhook_deliveries, webhooks,
};

/// Rows read or written at once: within the bind limits of both backends for the widest row.
pub(crate) const CHUNK: i64 = 500;

/// A table a copy moves: its rows read in chunks, in key order, and written as they were.
pub(crate) trait Table {
    /// The table's name in both schemas.
    const NAME: &'static str;
    /// A whole row.
    type Row;
    /// Whether its key is an `id` from a sequence, which a copy moves past the ids.
    const HAS_ID: bool = true;
    /// Whether that `id` is an identity column on PostgreSQL, which a copy must be let to
    /// write. The events' ids are not: the service makes them (`postgres/tx.rs`).
    const PG_IDENTITY: bool = Self::HAS_ID;

    fn count(conn: &mut Conn) -> QueryResult<i64>;
    /// The rows after `after` in key order (from the start when `None`), at most [`CHUNK`].
    fn chunk(conn: &mut Conn, after: Option<&Self::Row>) -> QueryResult<Vec<Self::Row>>;
    fn insert(conn: &mut Conn, rows: &[Self::Row]) -> QueryResult<usize>;
    /// What a row keeps of the database it came from and must not take along (a lease of
    /// one of its nodes).
    fn detach(_row: &mut Self::Row) {}
}

/// A table keyed by `id`.
macro_rules! id_table {
    ($name:ident, $table:ident, $row:ident $(, PG_IDENTITY = $identity:literal)?) => {
        pub(crate) struct $name;

        impl Table for $name {
            const NAME: &'static str = stringify!($table);
            type Row = $row;
            $(const PG_IDENTITY: bool = $identity;)?

            fn count(conn: &mut Conn) -> QueryResult<i64> {
                on_backend!(conn, |c| $table::table.count().get_result(c))
            }

            fn chunk(conn: &mut Conn, after: Option<&$row>) -> QueryResult<Vec<$row>> {
                let after = after.map_or(0, |row| row.id);
                on_backend!(conn, |c| $table::table
                    .filter($table::id.gt(after))
                    .order($table::id)
                    .limit(CHUNK)
                    .select($row::as_select())
                    .load(c))
            }

            fn insert(conn: &mut Conn, rows: &[$row]) -> QueryResult<usize> {
                on_backend!(conn, |c| diesel::insert_into($table::table)
                    .values(rows)
                    .execute(c))
            }

            id_table!(@detach $row);
        }
    };
    (@detach WebhookRow) => {
        fn detach(row: &mut WebhookRow) {
            row.leased_by = None;
            row.leased_until = None;
        }
    };
    (@detach $row:ident) => {};
}

#[derive(Debug, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = categories, treat_none_as_default_value = false)]
pub(crate) struct CategoryRow {
    id: i64,
    name: String,
    name_key: String,
    description: Option<String>,
}

#[derive(Debug, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = pets, treat_none_as_default_value = false)]
pub(crate) struct PetRow {
    id: i64,
    name: String,
    name_key: String,
    category_id: i64,
    status: String,
    stock: i64,
    open_orders: i64,
    committed: i64,
    held: i64,
    price_amount: Option<i64>,
    price_currency: Option<String>,
}

#[derive(Debug, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = shop, treat_none_as_default_value = false)]
pub(crate) struct ShopRow {
    id: i64,
    currency: String,
}

#[derive(Debug, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = orders, treat_none_as_default_value = false)]
pub(crate) struct OrderRow {
    id: i64,
    pet_id: i64,
    quantity: i64,
    ship_date: Option<Time>,
    complete: bool,
    owner_id: Option<i64>,
    unit_amount: Option<i64>,
    currency: Option<String>,
    line_count: i64,
}

#[derive(Debug, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = order_lines, treat_none_as_default_value = false)]
pub(crate) struct OrderLineRow {
    order_id: i64,
    line_no: i64,
    pet_id: i64,
    quantity: i64,
    unit_amount: Option<i64>,
    currency: Option<String>,
}

#[derive(Debug, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = stock_movements, treat_none_as_default_value = false)]
pub(crate) struct MovementRow {
    id: i64,
    pet_id: i64,
    kind: String,
    quantity: i64,
    available_change: i64,
    committed_change: i64,
    available_after: i64,
    committed_after: i64,
    order_id: Option<i64>,
    line_no: Option<i64>,
    reason: Option<String>,
    actor: Option<String>,
    request_id: Option<String>,
    time: Time,
    held_change: i64,
    held_after: i64,
    hold_id: Option<i64>,
}

#[derive(Debug, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = holds, treat_none_as_default_value = false)]
pub(crate) struct HoldRow {
    id: i64,
    owner_id: Option<i64>,
    created_at: Time,
    expires_at: Time,
    ended: Option<String>,
    ended_at: Option<Time>,
    order_id: Option<i64>,
}

#[derive(Debug, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = hold_lines, treat_none_as_default_value = false)]
pub(crate) struct HoldLineRow {
    hold_id: i64,
    line_no: i64,
    pet_id: i64,
    quantity: i64,
}

/// An event's row; read by name too, from a PostgreSQL source's `pending_events`.
#[derive(Debug, PartialEq, Queryable, QueryableByName, Selectable, Insertable)]
#[diesel(table_name = events, treat_none_as_default_value = false)]
pub(crate) struct EventRow {
    id: i64,
    time: Time,
    event_type: String,
    subject: String,
    data: Json,
    traceparent: Option<String>,
    actor: Option<String>,
}

#[derive(Debug, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = api_keys, treat_none_as_default_value = false)]
pub(crate) struct KeyRow {
    id: i64,
    name: String,
    role: String,
    prefix: String,
    hash: Vec<u8>,
    created_at: Time,
    revoked_at: Option<Time>,
}

#[derive(Debug, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = idempotency_records, treat_none_as_default_value = false)]
pub(crate) struct IdempotencyRow {
    owner_id: i64,
    idempotency_key: String,
    fingerprint: Vec<u8>,
    response: Vec<u8>,
    recorded_at: Time,
}

#[derive(Debug, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = webhooks, treat_none_as_default_value = false)]
pub(crate) struct WebhookRow {
    id: i64,
    url: String,
    event_types: String,
    secret: String,
    created_at: Time,
    delivered_through: i64,
    failed_attempts: i64,
    next_attempt_at: Option<Time>,
    leased_by: Option<String>,
    leased_until: Option<Time>,
    delivered_events: i64,
}

#[derive(Debug, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = webhook_deliveries, treat_none_as_default_value = false)]
pub(crate) struct DeliveryRow {
    id: i64,
    webhook_id: i64,
    event_id: i64,
    event_type: String,
    attempt: i64,
    attempted_at: Time,
    outcome: String,
    status_code: Option<i32>,
    error: Option<String>,
    next_attempt_at: Option<Time>,
}

id_table!(Categories, categories, CategoryRow);
id_table!(Pets, pets, PetRow);
id_table!(Orders, orders, OrderRow);
id_table!(Movements, stock_movements, MovementRow);
id_table!(Holds, holds, HoldRow);
id_table!(Events, events, EventRow, PG_IDENTITY = false);
id_table!(Keys, api_keys, KeyRow);
id_table!(Webhooks, webhooks, WebhookRow);
id_table!(Deliveries, webhook_deliveries, DeliveryRow);

/// Idempotency records, keyed by their owner and key.
pub(crate) struct Idempotency;

impl Table for Idempotency {
    const NAME: &'static str = "idempotency_records";
    type Row = IdempotencyRow;
    const HAS_ID: bool = false;

    fn count(conn: &mut Conn) -> QueryResult<i64> {
        on_backend!(conn, |c| idempotency_records::table.count().get_result(c))
    }

    fn chunk(conn: &mut Conn, after: Option<&IdempotencyRow>) -> QueryResult<Vec<IdempotencyRow>> {
        use idempotency_records::dsl::{idempotency_key, owner_id};
        let (owner, key) = after.map_or((i64::MIN, String::new()), |row| {
            (row.owner_id, row.idempotency_key.clone())
        });
        on_backend!(conn, |c| idempotency_records::table
            .filter(
                owner_id
                    .gt(owner)
                    .or(owner_id.eq(owner).and(idempotency_key.gt(&key)))
            )
            .order((owner_id, idempotency_key))
            .limit(CHUNK)
            .select(IdempotencyRow::as_select())
            .load(c))
    }

    fn insert(conn: &mut Conn, rows: &[IdempotencyRow]) -> QueryResult<usize> {
        on_backend!(conn, |c| diesel::insert_into(idempotency_records::table)
            .values(rows)
            .execute(c))
    }
}

/// A table of lines, keyed by what they belong to (`$of`) and their number.
macro_rules! line_table {
    ($name:ident, $table:ident, $row:ident, $of:ident) => {
        pub(crate) struct $name;

        impl Table for $name {
            const NAME: &'static str = stringify!($table);
            type Row = $row;
            const HAS_ID: bool = false;

            fn count(conn: &mut Conn) -> QueryResult<i64> {
                on_backend!(conn, |c| $table::table.count().get_result(c))
            }

            fn chunk(conn: &mut Conn, after: Option<&$row>) -> QueryResult<Vec<$row>> {
                use $table::dsl::{line_no, $of};
                let (of, line) = after.map_or((i64::MIN, i64::MIN), |row| (row.$of, row.line_no));
                on_backend!(conn, |c| $table::table
                    .filter($of.gt(of).or($of.eq(of).and(line_no.gt(line))))
                    .order(($of, line_no))
                    .limit(CHUNK)
                    .select($row::as_select())
                    .load(c))
            }

            fn insert(conn: &mut Conn, rows: &[$row]) -> QueryResult<usize> {
                on_backend!(conn, |c| diesel::insert_into($table::table)
                    .values(rows)
                    .execute(c))
            }
        }
    };
}

line_table!(OrderLines, order_lines, OrderLineRow, order_id);
line_table!(HoldLines, hold_lines, HoldLineRow, hold_id);

/// The shop's one row (its currency), keyed by a constant id rather than a sequence.
pub(crate) struct Shop;

impl Table for Shop {
    const NAME: &'static str = "shop";
    type Row = ShopRow;
    const HAS_ID: bool = false;

    fn count(conn: &mut Conn) -> QueryResult<i64> {
        on_backend!(conn, |c| shop::table.count().get_result(c))
    }

    fn chunk(conn: &mut Conn, after: Option<&ShopRow>) -> QueryResult<Vec<ShopRow>> {
        let after = after.map_or(i64::MIN, |row| row.id);
        on_backend!(conn, |c| shop::table
            .filter(shop::id.gt(after))
            .order(shop::id)
            .select(ShopRow::as_select())
            .load(c))
    }

    fn insert(conn: &mut Conn, rows: &[ShopRow]) -> QueryResult<usize> {
        on_backend!(conn, |c| diesel::insert_into(shop::table)
            .values(rows)
            .execute(c))
    }
}

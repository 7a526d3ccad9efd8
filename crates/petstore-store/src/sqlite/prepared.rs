//! Statements written out by hand so that Diesel prepares them once per connection.
//!
//! Diesel keeps a connection's prepared statements in a cache, but not all of them: it never
//! caches an `UPDATE` built with its query builder, and transaction control goes through
//! `sqlite3_exec`. Either way SQLite parses and plans the statement on every execution, which
//! cost an order about a tenth of its instructions (docs/performance.md). The statements on
//! the busiest paths are therefore types of their own here: fixed text, bound parameters, a
//! static query id, so Diesel's cache keeps them.
//!
//! The `INSERT`s of orders, events and movements say `OR FAIL`: a row that breaks a check
//! stops the statement but keeps the rows before it. A statement that may abort part-way keeps
//! a statement journal (a copy of each page it changes, to undo it alone), and none is needed:
//! a write that fails is undone whole, by its savepoint or by its burst (`sqlite/burst.rs`).
//! None of them keeps one: SQLite counts a function call in a check as a way to abort, so the
//! checks of events and movements call none (migration `000023`).

use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::sql_types::{BigInt, Binary, Nullable, Text};
use diesel::sqlite::{Sqlite, SqliteConnection};
use diesel::{QueryResult, RunQueryDsl};

use crate::schema::sql_types::{Time, UtcTime};

mod appends;
mod by_count;
mod order_lines;

pub(crate) use appends::{AppendEvents, RecordMovements};
pub(crate) use by_count::execute as execute_rows;
pub(crate) use order_lines::{InsertLines, LineColumns};

/// A statement of fixed text and no parameters, cached by its type.
macro_rules! fixed_statement {
    ($(#[$doc:meta])* $name:ident, $sql:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, QueryId)]
        pub(crate) struct $name;

        impl QueryFragment<Sqlite> for $name {
            fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Sqlite>) -> QueryResult<()> {
                out.push_sql($sql);
                Ok(())
            }
        }

        impl RunQueryDsl<SqliteConnection> for $name {}
    };
}

fixed_statement!(
    /// Begins a deferred transaction.
    Begin,
    "BEGIN"
);
fixed_statement!(
    /// Commits the open transaction.
    Commit,
    "COMMIT"
);
fixed_statement!(
    /// Rolls the open transaction back.
    Rollback,
    "ROLLBACK"
);

/// `SELECT total_changes()`: whether a write of a burst changed a row (`Turn::total_changes`).
#[derive(Debug, Clone, Copy, QueryId)]
pub(crate) struct TotalChanges;

impl Query for TotalChanges {
    type SqlType = BigInt;
}

impl QueryFragment<Sqlite> for TotalChanges {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Sqlite>) -> QueryResult<()> {
        out.push_sql("SELECT total_changes()");
        Ok(())
    }
}

impl RunQueryDsl<SqliteConnection> for TotalChanges {}

/// `UPDATE pets SET stock = ? WHERE id = ?`: every order changes a pet's stock.
#[derive(Debug, Clone, Copy, QueryId)]
pub(crate) struct SetStock {
    pub(crate) pet_id: i64,
    pub(crate) stock: i64,
}

impl QueryFragment<Sqlite> for SetStock {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Sqlite>) -> QueryResult<()> {
        out.push_sql("UPDATE `pets` SET `stock` = ");
        out.push_bind_param::<BigInt, _>(&self.stock)?;
        out.push_sql(" WHERE `pets`.`id` = ");
        out.push_bind_param::<BigInt, _>(&self.pet_id)?;
        Ok(())
    }
}

impl RunQueryDsl<SqliteConnection> for SetStock {}

/// `UPDATE pets SET open_orders = open_orders + 1, committed = committed + ? WHERE id = ?`:
/// a line after an order's first counted into its pet (no trigger does: the migration
/// `lines_counted_by_writer` says why).
#[derive(Debug, Clone, Copy, QueryId)]
pub(crate) struct CountLine {
    pub(crate) pet_id: i64,
    pub(crate) quantity: i64,
}

impl QueryFragment<Sqlite> for CountLine {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Sqlite>) -> QueryResult<()> {
        out.push_sql(
            "UPDATE `pets` SET `open_orders` = `open_orders` + 1, `committed` = `committed` + ",
        );
        out.push_bind_param::<BigInt, _>(&self.quantity)?;
        out.push_sql(" WHERE `pets`.`id` = ");
        out.push_bind_param::<BigInt, _>(&self.pet_id)?;
        Ok(())
    }
}

impl RunQueryDsl<SqliteConnection> for CountLine {}

/// `UPDATE pets SET stock = ?, open_orders = open_orders + 1, committed = committed + ? WHERE
/// id = ?`: a pet's stock set by a checkout, with the line that set it counted in the same
/// statement, where a [`CountLine`] of its own cost a line as much again.
#[derive(Debug, Clone, Copy, QueryId)]
pub(crate) struct SetStockCounting {
    pub(crate) line: CountLine,
    pub(crate) stock: i64,
}

impl QueryFragment<Sqlite> for SetStockCounting {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Sqlite>) -> QueryResult<()> {
        out.push_sql("UPDATE `pets` SET `stock` = ");
        out.push_bind_param::<BigInt, _>(&self.stock)?;
        out.push_sql(", `open_orders` = `open_orders` + 1, `committed` = `committed` + ");
        out.push_bind_param::<BigInt, _>(&self.line.quantity)?;
        out.push_sql(" WHERE `pets`.`id` = ");
        out.push_bind_param::<BigInt, _>(&self.line.pet_id)?;
        Ok(())
    }
}

impl RunQueryDsl<SqliteConnection> for SetStockCounting {}

/// Inserts an open order of `line_count` lines, its first in the row: its id. `OR FAIL`, as
/// the multi-row `INSERT`s (see the module's header), for the triggers it fires: their
/// statements take the outer statement's way of failing.
#[derive(Debug)]
pub(crate) struct PlaceOrder {
    pub(crate) pet_id: i64,
    pub(crate) quantity: i64,
    pub(crate) ship_date: Option<Time>,
    pub(crate) owner: Option<i64>,
    pub(crate) unit_amount: Option<i64>,
    pub(crate) currency: Option<&'static str>,
    pub(crate) line_count: i64,
}

impl QueryId for PlaceOrder {
    type QueryId = PlaceOrder;
    const HAS_STATIC_QUERY_ID: bool = true;
}

impl Query for PlaceOrder {
    type SqlType = BigInt;
}

impl QueryFragment<Sqlite> for PlaceOrder {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Sqlite>) -> QueryResult<()> {
        out.push_sql(
            "INSERT OR FAIL INTO `orders` (`pet_id`, `quantity`, `ship_date`, `complete`, \
             `owner_id`, `unit_amount`, `currency`, `line_count`) VALUES (",
        );
        out.push_bind_param::<BigInt, _>(&self.pet_id)?;
        out.push_sql(", ");
        out.push_bind_param::<BigInt, _>(&self.quantity)?;
        out.push_sql(", ");
        out.push_bind_param::<Nullable<UtcTime>, _>(&self.ship_date)?;
        out.push_sql(", 0, ");
        out.push_bind_param::<Nullable<BigInt>, _>(&self.owner)?;
        out.push_sql(", ");
        out.push_bind_param::<Nullable<BigInt>, _>(&self.unit_amount)?;
        out.push_sql(", ");
        out.push_bind_param::<Nullable<Text>, _>(&self.currency)?;
        out.push_sql(", ");
        out.push_bind_param::<BigInt, _>(&self.line_count)?;
        out.push_sql(") RETURNING `id`");
        Ok(())
    }
}

impl RunQueryDsl<SqliteConnection> for PlaceOrder {}

/// Records the answer to an idempotency key that has no record: its first. Written out as the
/// other hot statements are, so Diesel's cache keeps it.
#[derive(Debug)]
pub(crate) struct RecordAnswer<'a> {
    pub(crate) owner: i64,
    pub(crate) key: &'a str,
    pub(crate) fingerprint: &'a [u8],
    pub(crate) response: &'a [u8],
    pub(crate) recorded_at: Time,
}

/// One text whatever the borrows: Diesel's cache keys it by this static id.
impl QueryId for RecordAnswer<'_> {
    type QueryId = RecordAnswer<'static>;
    const HAS_STATIC_QUERY_ID: bool = true;
}

impl RecordAnswer<'_> {
    fn walk_insert<'b>(&'b self, out: &mut AstPass<'_, 'b, Sqlite>) -> QueryResult<()> {
        out.push_sql(
            "INSERT INTO idempotency_records (owner_id, idempotency_key, fingerprint, response, \
             recorded_at) VALUES (",
        );
        out.push_bind_param::<BigInt, _>(&self.owner)?;
        out.push_sql(", ");
        out.push_bind_param::<Text, _>(self.key)?;
        out.push_sql(", ");
        out.push_bind_param::<Binary, _>(self.fingerprint)?;
        out.push_sql(", ");
        out.push_bind_param::<Binary, _>(self.response)?;
        out.push_sql(", ");
        out.push_bind_param::<UtcTime, _>(&self.recorded_at)?;
        out.push_sql(")");
        Ok(())
    }
}

impl QueryFragment<Sqlite> for RecordAnswer<'_> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Sqlite>) -> QueryResult<()> {
        self.walk_insert(&mut out)
    }
}

impl RunQueryDsl<SqliteConnection> for RecordAnswer<'_> {}

/// Records the answer to an idempotency key over its expired record: Diesel never caches an
/// upsert built with its query builder (its `DO UPDATE`).
#[derive(Debug)]
pub(crate) struct ReplaceAnswer<'a> {
    pub(crate) answer: RecordAnswer<'a>,
    /// A record of the key made before this is expired, and written over.
    pub(crate) expired_before: Time,
}

/// One text whatever the borrows, as [`RecordAnswer`]'s.
impl QueryId for ReplaceAnswer<'_> {
    type QueryId = ReplaceAnswer<'static>;
    const HAS_STATIC_QUERY_ID: bool = true;
}

impl QueryFragment<Sqlite> for ReplaceAnswer<'_> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Sqlite>) -> QueryResult<()> {
        self.answer.walk_insert(&mut out)?;
        out.push_sql(
            " ON CONFLICT (owner_id, idempotency_key) DO UPDATE SET \
             fingerprint = excluded.fingerprint, response = excluded.response, \
             recorded_at = excluded.recorded_at WHERE idempotency_records.recorded_at < ",
        );
        out.push_bind_param::<UtcTime, _>(&self.expired_before)?;
        Ok(())
    }
}

impl RunQueryDsl<SqliteConnection> for ReplaceAnswer<'_> {}

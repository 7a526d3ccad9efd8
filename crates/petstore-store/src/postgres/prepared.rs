//! Statements of the write path written out by hand, so that Diesel prepares them once per
//! connection: Diesel's cache keeps only statements of a static query id, which an `UPDATE`
//! from its query builder, a batch `INSERT` and any SQL literal are not. Uncached, the server
//! parses and plans them on every order (see `sqlite/prepared.rs` for the same on SQLite).
//! A write burst's held-back writes ([`Deferred`](super::deferred::Deferred)) go out in
//! [`SetStocks`] and [`PlaceOrdersAndAppendEvents`].

use diesel::expression::{AppearsOnTable, Expression, SelectableExpression, ValidGrouping};
use diesel::pg::{Pg, PgConnection};
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::sql_types::{Array, BigInt, Jsonb, Nullable, Text, Timestamptz};
use diesel::{QueryResult, RunQueryDsl};

/// `UPDATE pets SET stock = $1 WHERE id = $2`: every order changes a pet's stock.
#[derive(Debug, Clone, Copy, QueryId)]
pub(crate) struct SetStock {
    pub(crate) pet_id: i64,
    pub(crate) stock: i64,
}

impl QueryFragment<Pg> for SetStock {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql("UPDATE pets SET stock = ");
        out.push_bind_param::<BigInt, _>(&self.stock)?;
        out.push_sql(" WHERE id = ");
        out.push_bind_param::<BigInt, _>(&self.pet_id)?;
        Ok(())
    }
}

impl RunQueryDsl<PgConnection> for SetStock {}

/// Appends events to `pending_events`, each its columns in parallel arrays, in their order
/// (the stamper gives them their place in the feed; see the migration `feed_in_commit_order`).
/// One text for any number of events, so it is prepared once; it returns the transaction's
/// id, which a write needs before its `COMMIT` (`PgStore::write_once`) and would otherwise
/// ask for in a round trip of its own.
#[derive(Debug, QueryId)]
pub(crate) struct AppendEvents {
    pub(crate) time: chrono::DateTime<chrono::Utc>,
    pub(crate) traceparent: Option<String>,
    pub(crate) types: Vec<String>,
    pub(crate) subjects: Vec<String>,
    pub(crate) data: Vec<serde_json::Value>,
}

impl QueryFragment<Pg> for AppendEvents {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql("INSERT INTO pending_events (time, type, subject, data, traceparent) SELECT ");
        out.push_bind_param::<Timestamptz, _>(&self.time)?;
        out.push_sql(", e.type, e.subject, e.data, ");
        out.push_bind_param::<Nullable<Text>, _>(&self.traceparent)?;
        out.push_sql(" FROM unnest(");
        out.push_bind_param::<Array<Text>, _>(&self.types)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Text>, _>(&self.subjects)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Jsonb>, _>(&self.data)?;
        out.push_sql(
            ") WITH ORDINALITY AS e(type, subject, data, place) ORDER BY e.place \
             RETURNING pg_current_xact_id()::text::bigint",
        );
        Ok(())
    }
}

impl RunQueryDsl<PgConnection> for AppendEvents {}

impl diesel::query_builder::Query for AppendEvents {
    type SqlType = BigInt;
}

/// `nextval('orders_id_seq')`, as a column of the statement that locks a write burst's pets:
/// an order id for each pet locked, so that the burst's orders know their ids before they are
/// sent ([`Deferred`](super::deferred::Deferred)). Written as SQL text of a static query id,
/// so the statement stays prepared.
#[derive(Debug, Clone, Copy, QueryId, ValidGrouping)]
pub(crate) struct NextOrderId;

impl Expression for NextOrderId {
    type SqlType = BigInt;
}

impl<QS> AppearsOnTable<QS> for NextOrderId {}
impl<QS> SelectableExpression<QS> for NextOrderId {}

impl QueryFragment<Pg> for NextOrderId {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql("nextval('orders_id_seq')");
        Ok(())
    }
}

/// The stock levels a write burst set, each pet's last, in one statement (one text for any
/// number of pets).
#[derive(Debug, QueryId)]
pub(crate) struct SetStocks {
    pub(crate) pet_ids: Vec<i64>,
    pub(crate) stocks: Vec<i64>,
}

impl QueryFragment<Pg> for SetStocks {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql("UPDATE pets SET stock = v.stock FROM unnest(");
        out.push_bind_param::<Array<BigInt>, _>(&self.pet_ids)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<BigInt>, _>(&self.stocks)?;
        out.push_sql(") AS v(id, stock) WHERE pets.id = v.id");
        Ok(())
    }
}

impl RunQueryDsl<PgConnection> for SetStocks {}

/// The orders a write burst placed (their ids taken from the sequence beforehand) and the
/// events its writes appended, in one statement, events in the order they were appended. It
/// returns the transaction's id once per event, as [`AppendEvents`] does.
///
/// Not one statement with [`SetStocks`]: the trigger on `orders` updates the same pets' rows,
/// and PostgreSQL applies only one of two changes to a row made in one statement.
#[derive(Debug, Default, QueryId)]
pub(crate) struct PlaceOrdersAndAppendEvents {
    pub(crate) order_ids: Vec<i64>,
    pub(crate) pet_ids: Vec<i64>,
    pub(crate) quantities: Vec<i64>,
    pub(crate) ship_dates: Vec<Option<chrono::DateTime<chrono::Utc>>>,
    pub(crate) owner_ids: Vec<Option<i64>>,
    pub(crate) times: Vec<chrono::DateTime<chrono::Utc>>,
    pub(crate) traceparents: Vec<Option<String>>,
    pub(crate) types: Vec<String>,
    pub(crate) subjects: Vec<String>,
    pub(crate) data: Vec<serde_json::Value>,
}

impl PlaceOrdersAndAppendEvents {
    /// Whether it holds neither an order nor an event: then it is not sent.
    pub(crate) fn is_empty(&self) -> bool {
        self.order_ids.is_empty() && self.types.is_empty()
    }
}

impl QueryFragment<Pg> for PlaceOrdersAndAppendEvents {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql(
            "WITH placed AS (INSERT INTO orders (id, pet_id, quantity, ship_date, complete, \
             owner_id) OVERRIDING SYSTEM VALUE SELECT o.id, o.pet_id, o.quantity, o.ship_date, \
             false, o.owner_id FROM unnest(",
        );
        out.push_bind_param::<Array<BigInt>, _>(&self.order_ids)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<BigInt>, _>(&self.pet_ids)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<BigInt>, _>(&self.quantities)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Nullable<Timestamptz>>, _>(&self.ship_dates)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Nullable<BigInt>>, _>(&self.owner_ids)?;
        out.push_sql(
            ") AS o(id, pet_id, quantity, ship_date, owner_id) ORDER BY o.id) \
             INSERT INTO pending_events (time, type, subject, data, traceparent) \
             SELECT e.time, e.type, e.subject, e.data, e.traceparent FROM unnest(",
        );
        out.push_bind_param::<Array<Timestamptz>, _>(&self.times)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Text>, _>(&self.types)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Text>, _>(&self.subjects)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Jsonb>, _>(&self.data)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Nullable<Text>>, _>(&self.traceparents)?;
        out.push_sql(
            ") WITH ORDINALITY AS e(time, type, subject, data, traceparent, place) \
             ORDER BY e.place RETURNING pg_current_xact_id()::text::bigint",
        );
        Ok(())
    }
}

impl RunQueryDsl<PgConnection> for PlaceOrdersAndAppendEvents {}

impl diesel::query_builder::Query for PlaceOrdersAndAppendEvents {
    type SqlType = BigInt;
}

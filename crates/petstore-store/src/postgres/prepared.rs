//! Statements written out by hand, most of them the write path's, so that Diesel prepares
//! them once per connection: Diesel's cache keeps only statements of a static query id, which an `UPDATE`
//! from its query builder, a batch `INSERT` and any SQL literal are not. Uncached, the server
//! parses and plans them on every order (see `sqlite/prepared.rs` for the same on SQLite).
//! A write burst's held-back writes ([`HeldBack`](super::held_back::HeldBack)) go out in
//! [`ChangePets`] and [`SendHeldBack`].

use diesel::pg::{Pg, PgConnection};
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::sql_types::{Array, BigInt, Interval, Nullable, Text, Timestamptz};
use diesel::{QueryResult, RunQueryDsl};
use petstore_core::RECORD_LIFETIME;

use crate::schema::sql_types::{JsonText, JsonValue};

mod columns;

pub(crate) use columns::{LineArrays, MovementArrays, RecordColumns};

/// An expression of fixed SQL text, of SQL type `$ty`, usable in any select list: a type of
/// static query id, so that a statement selecting it stays prepared.
macro_rules! fixed_select {
    ($(#[$doc:meta])* $vis:vis $name:ident: $ty:ty = $sql:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, diesel::query_builder::QueryId, diesel::expression::ValidGrouping)]
        $vis struct $name;

        impl diesel::expression::Expression for $name {
            type SqlType = $ty;
        }

        impl<QS> diesel::expression::AppearsOnTable<QS> for $name {}
        impl<QS> diesel::expression::SelectableExpression<QS> for $name {}

        impl diesel::query_builder::QueryFragment<diesel::pg::Pg> for $name {
            fn walk_ast<'b>(
                &'b self,
                mut out: diesel::query_builder::AstPass<'_, 'b, diesel::pg::Pg>,
            ) -> diesel::QueryResult<()> {
                out.push_sql($sql);
                Ok(())
            }
        }
    };
}
pub(crate) use fixed_select;

fixed_select!(
    /// `nextval('orders_id_seq')`: an id for an order placed with none in hand (the statement
    /// that locks a burst's pets takes one per pet it locks), so that every order knows its id
    /// before it is sent ([`HeldBack`](super::held_back::HeldBack)).
    pub(crate) NextOrderId: BigInt = "nextval('orders_id_seq')"
);

/// What a write burst changed in its pets' rows, in one statement (one text for any number
/// of pets): each pet's stock as last set (`NULL`: left as it is), and the open orders and
/// committed units its orders' lines add (no trigger counts those in this version's writes:
/// the migrations `lines_counted_by_writer` and `orders_counted_by_writer` say why).
#[derive(Debug, QueryId)]
pub(crate) struct ChangePets {
    pub(crate) pet_ids: Vec<i64>,
    pub(crate) stocks: Vec<Option<i64>>,
    pub(crate) orders: Vec<i64>,
    pub(crate) units: Vec<i64>,
}

impl QueryFragment<Pg> for ChangePets {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql(
            "UPDATE pets SET stock = coalesce(v.stock, pets.stock), \
             open_orders = pets.open_orders + v.orders, committed = pets.committed + v.units \
             FROM unnest(",
        );
        out.push_bind_param::<Array<BigInt>, _>(&self.pet_ids)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Nullable<BigInt>>, _>(&self.stocks)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<BigInt>, _>(&self.orders)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<BigInt>, _>(&self.units)?;
        // The ids again, as a condition on `pets` itself: the plan is prepared once, for an
        // `unnest` of unknown length, and on a shop of a thousand pets or so the planner
        // joined it to a scan of the whole table rather than to the primary key.
        out.push_sql(") AS v(id, stock, orders, units) WHERE pets.id = v.id AND pets.id = ANY(");
        out.push_bind_param::<Array<BigInt>, _>(&self.pet_ids)?;
        out.push_sql(")");
        Ok(())
    }
}

impl RunQueryDsl<PgConnection> for ChangePets {}

/// What a write transaction held back, in one statement: the orders it placed (their ids
/// taken from the sequence beforehand) with their further lines, the idempotency records its creates made, the stock
/// movements it recorded, and the events its writes appended, in the order they were appended. It returns the transaction's
/// id and how many records were written: one written over an expired record that another
/// transaction has made fresh meanwhile is not, and the transaction must not commit then.
///
/// Sent after [`ChangePets`], which counts its orders' lines into their pets.
#[derive(Debug, Default, QueryId)]
pub(crate) struct SendHeldBack {
    pub(crate) order_ids: Vec<i64>,
    pub(crate) pet_ids: Vec<i64>,
    pub(crate) quantities: Vec<i64>,
    pub(crate) ship_dates: Vec<Option<chrono::DateTime<chrono::Utc>>>,
    pub(crate) owner_ids: Vec<Option<i64>>,
    pub(crate) unit_amounts: Vec<Option<i64>>,
    pub(crate) currencies: Vec<Option<&'static str>>,
    pub(crate) line_counts: Vec<i64>,
    /// Lines 2 and on of the orders' (a checkout's).
    pub(crate) lines: LineArrays,
    /// Records of keys the transaction found no record of: inserted.
    pub(crate) records: RecordColumns,
    /// Records of keys whose expired record the transaction found: written over it.
    pub(crate) replacing: RecordColumns,
    /// Stock movements: inserted once the ledger has begun.
    pub(crate) movements: MovementArrays,
    pub(crate) times: Vec<chrono::DateTime<chrono::Utc>>,
    pub(crate) traceparents: Vec<Option<String>>,
    pub(crate) actors: Vec<Option<String>>,
    pub(crate) types: Vec<String>,
    pub(crate) subjects: Vec<String>,
    pub(crate) data: Vec<JsonText>,
}

impl SendHeldBack {
    /// Whether it holds no order, record, movement or event: then it is not sent.
    pub(crate) fn is_empty(&self) -> bool {
        self.order_ids.is_empty()
            && self.records.keys.is_empty()
            && self.replacing.keys.is_empty()
            && self.movements.is_empty()
            && self.types.is_empty()
    }

    /// How many records it writes.
    pub(crate) fn records(&self) -> usize {
        self.records.keys.len() + self.replacing.keys.len()
    }
}

impl QueryFragment<Pg> for SendHeldBack {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql(
            "WITH placed AS (INSERT INTO orders (id, pet_id, quantity, ship_date, complete, \
             owner_id, unit_amount, currency, line_count) OVERRIDING SYSTEM VALUE SELECT o.id, \
             o.pet_id, o.quantity, o.ship_date, false, o.owner_id, o.unit_amount, o.currency, \
             o.line_count FROM unnest(",
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
        out.push_sql(", ");
        out.push_bind_param::<Array<Nullable<BigInt>>, _>(&self.unit_amounts)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Nullable<Text>>, _>(&self.currencies)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<BigInt>, _>(&self.line_counts)?;
        // A key no record was found of is inserted: one recorded meanwhile by another
        // transaction fails the statement (a unique violation, `held_back.rs`). One whose
        // expired record was found is written over it, and not if the record is fresh now.
        out.push_sql(
            ") AS o(id, pet_id, quantity, ship_date, owner_id, unit_amount, currency, \
             line_count) ORDER BY o.id), ",
        );
        out.push_sql("lined AS (");
        self.lines.walk(&mut out)?;
        out.push_sql(" RETURNING 1), recorded AS (");
        self.records.walk(&mut out)?;
        out.push_sql(" RETURNING 1), replaced AS (");
        self.replacing.walk(&mut out)?;
        out.push_sql(
            " ON CONFLICT (owner_id, idempotency_key) DO UPDATE SET \
             fingerprint = excluded.fingerprint, response = excluded.response, \
             recorded_at = excluded.recorded_at \
             WHERE idempotency_records.recorded_at < excluded.recorded_at - ",
        );
        out.push_bind_param::<Interval, _>(&RECORD_LIFETIME)?;
        out.push_sql(" RETURNING 1), moved AS (");
        self.movements.walk(&mut out)?;
        out.push_sql(
            " RETURNING 1), \
             appended AS (INSERT INTO pending_events (time, type, subject, data, traceparent, \
             actor) SELECT e.time, e.type, e.subject, e.data, e.traceparent, e.actor FROM unnest(",
        );
        out.push_bind_param::<Array<Timestamptz>, _>(&self.times)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Text>, _>(&self.types)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Text>, _>(&self.subjects)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<JsonValue>, _>(&self.data)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Nullable<Text>>, _>(&self.traceparents)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Nullable<Text>>, _>(&self.actors)?;
        out.push_sql(
            ") WITH ORDINALITY AS e(time, type, subject, data, traceparent, actor, place) \
             ORDER BY e.place RETURNING 1) \
             SELECT pg_current_xact_id()::text::bigint, \
             (SELECT count(*) FROM recorded) + (SELECT count(*) FROM replaced)",
        );
        Ok(())
    }
}

impl RunQueryDsl<PgConnection> for SendHeldBack {}

impl diesel::query_builder::Query for SendHeldBack {
    type SqlType = (BigInt, BigInt);
}

#[cfg(test)]
mod tests;

//! Statements written out by hand, most of them the write path's, so that Diesel prepares
//! them once per connection: Diesel's cache keeps only statements of a static query id, which an `UPDATE`
//! from its query builder, a batch `INSERT` and any SQL literal are not. Uncached, the server
//! parses and plans them on every order (see `sqlite/prepared.rs` for the same on SQLite).
//! A write burst's held-back writes ([`HeldBack`](super::held_back::HeldBack)) go out in
//! [`SetStocks`] and [`SendHeldBack`].

use diesel::pg::{Pg, PgConnection};
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::sql_types::{Array, BigInt, Bytea, Interval, Jsonb, Nullable, Text, Timestamptz};
use diesel::{QueryResult, RunQueryDsl};
use petstore_core::{IdempotencyRecord, PricedLine, RECORD_LIFETIME};

use crate::records::MovementColumns;

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

/// What a write transaction held back, in one statement: the orders it placed (their ids
/// taken from the sequence beforehand) with their further lines, the idempotency records its creates made, the stock
/// movements it recorded, and the events its writes appended, in the order they were appended. It returns the transaction's
/// id and how many records were written: one written over an expired record that another
/// transaction has made fresh meanwhile is not, and the transaction must not commit then.
///
/// Not one statement with [`SetStocks`]: the trigger on `orders` updates the same pets' rows,
/// and PostgreSQL applies only one of two changes to a row made in one statement.
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
    pub(crate) data: Vec<serde_json::Value>,
}

/// Idempotency records, each column an array, as [`SendHeldBack`] binds them.
#[derive(Debug, Default)]
pub(crate) struct RecordColumns {
    pub(crate) owners: Vec<i64>,
    pub(crate) keys: Vec<String>,
    pub(crate) fingerprints: Vec<Vec<u8>>,
    pub(crate) responses: Vec<Vec<u8>>,
    pub(crate) times: Vec<chrono::DateTime<chrono::Utc>>,
}

impl RecordColumns {
    /// Adds `owner`'s record of key `key`.
    pub(crate) fn push(&mut self, owner: i64, key: String, record: IdempotencyRecord) {
        let IdempotencyRecord {
            fingerprint,
            response,
            recorded_at,
        } = record;
        self.owners.push(owner);
        self.keys.push(key);
        self.fingerprints.push(fingerprint.to_vec());
        self.responses.push(response);
        self.times.push(recorded_at);
    }

    /// `INSERT INTO idempotency_records … SELECT * FROM unnest(…)` of these records.
    fn walk<'b>(&'b self, out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql(
            "INSERT INTO idempotency_records (owner_id, idempotency_key, fingerprint, response, \
             recorded_at) SELECT * FROM unnest(",
        );
        out.push_bind_param::<Array<BigInt>, _>(&self.owners)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Text>, _>(&self.keys)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Bytea>, _>(&self.fingerprints)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Bytea>, _>(&self.responses)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Timestamptz>, _>(&self.times)?;
        out.push_sql(")");
        Ok(())
    }
}

/// Orders' lines after their first, each column an array, as [`SendHeldBack`] binds them.
#[derive(Debug, Default)]
pub(crate) struct LineArrays {
    order_ids: Vec<i64>,
    line_nos: Vec<i64>,
    pet_ids: Vec<i64>,
    quantities: Vec<i64>,
    unit_amounts: Vec<Option<i64>>,
    currencies: Vec<Option<&'static str>>,
}

impl LineArrays {
    /// Adds order `order_id`'s `lines`, numbered from 2.
    pub(crate) fn extend(&mut self, order_id: i64, lines: &[PricedLine]) {
        for (line, line_no) in lines.iter().zip(2i64..) {
            self.order_ids.push(order_id);
            self.line_nos.push(line_no);
            self.pet_ids.push(line.pet_id.get());
            self.quantities.push(i64::from(line.quantity.get()));
            self.unit_amounts.push(line.price.map(|p| p.amount.get()));
            self.currencies.push(line.price.map(|p| p.currency.code()));
        }
    }

    /// `INSERT INTO order_lines … SELECT * FROM unnest(…)` of these lines. Their orders are
    /// inserted by the same statement: the foreign key is checked at its end.
    fn walk<'b>(&'b self, out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql(
            "INSERT INTO order_lines (order_id, line_no, pet_id, quantity, unit_amount, \
             currency) SELECT * FROM unnest(",
        );
        for column in [
            &self.order_ids,
            &self.line_nos,
            &self.pet_ids,
            &self.quantities,
        ] {
            out.push_bind_param::<Array<BigInt>, _>(column)?;
            out.push_sql(", ");
        }
        out.push_bind_param::<Array<Nullable<BigInt>>, _>(&self.unit_amounts)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Nullable<Text>>, _>(&self.currencies)?;
        out.push_sql(")");
        Ok(())
    }
}

/// Stock movements, each column an array, as [`SendHeldBack`] binds them.
#[derive(Debug, Default)]
pub(crate) struct MovementArrays {
    pet_ids: Vec<i64>,
    kinds: Vec<&'static str>,
    quantities: Vec<i64>,
    available_changes: Vec<i64>,
    committed_changes: Vec<i64>,
    available_afters: Vec<i64>,
    committed_afters: Vec<i64>,
    order_ids: Vec<Option<i64>>,
    line_nos: Vec<Option<i64>>,
    reasons: Vec<Option<String>>,
    actors: Vec<Option<String>>,
    request_ids: Vec<Option<String>>,
    times: Vec<chrono::DateTime<chrono::Utc>>,
    held_changes: Vec<i64>,
    held_afters: Vec<i64>,
    hold_ids: Vec<Option<i64>>,
}

impl MovementArrays {
    /// Adds `rows`, recorded at `time`.
    pub(crate) fn extend(
        &mut self,
        time: chrono::DateTime<chrono::Utc>,
        rows: Vec<MovementColumns>,
    ) {
        for row in rows {
            // Destructured: a column added to movements is a compile error here until it is sent.
            let MovementColumns {
                pet_id,
                kind,
                quantity,
                available_change,
                committed_change,
                available_after,
                committed_after,
                order_id,
                line_no,
                reason,
                actor,
                request_id,
                held_change,
                held_after,
                hold_id,
            } = row;
            self.pet_ids.push(pet_id);
            self.kinds.push(kind);
            self.quantities.push(quantity);
            self.available_changes.push(available_change);
            self.committed_changes.push(committed_change);
            self.available_afters.push(available_after);
            self.committed_afters.push(committed_after);
            self.order_ids.push(order_id);
            self.line_nos.push(line_no);
            self.reasons.push(reason);
            self.actors.push(actor);
            self.request_ids.push(request_id);
            self.times.push(time);
            self.held_changes.push(held_change);
            self.held_afters.push(held_after);
            self.hold_ids.push(hold_id);
        }
    }

    /// `INSERT INTO stock_movements … SELECT … FROM unnest(…)` of these movements, in the
    /// order they were recorded, each only if the ledger has begun.
    fn walk<'b>(&'b self, out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql(
            "INSERT INTO stock_movements (pet_id, kind, quantity, available_change, \
             committed_change, available_after, committed_after, order_id, line_no, reason, \
             actor, request_id, time, held_change, held_after, hold_id) SELECT m.pet_id, \
             m.kind, m.quantity, m.available_change, m.committed_change, m.available_after, \
             m.committed_after, m.order_id, m.line_no, m.reason, m.actor, m.request_id, m.time, \
             m.held_change, m.held_after, m.hold_id FROM unnest(",
        );
        out.push_bind_param::<Array<BigInt>, _>(&self.pet_ids)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Text>, _>(&self.kinds)?;
        for column in [
            &self.quantities,
            &self.available_changes,
            &self.committed_changes,
            &self.available_afters,
            &self.committed_afters,
        ] {
            out.push_sql(", ");
            out.push_bind_param::<Array<BigInt>, _>(column)?;
        }
        for column in [&self.order_ids, &self.line_nos] {
            out.push_sql(", ");
            out.push_bind_param::<Array<Nullable<BigInt>>, _>(column)?;
        }
        for column in [&self.reasons, &self.actors, &self.request_ids] {
            out.push_sql(", ");
            out.push_bind_param::<Array<Nullable<Text>>, _>(column)?;
        }
        out.push_sql(", ");
        out.push_bind_param::<Array<Timestamptz>, _>(&self.times)?;
        for column in [&self.held_changes, &self.held_afters] {
            out.push_sql(", ");
            out.push_bind_param::<Array<BigInt>, _>(column)?;
        }
        out.push_sql(", ");
        out.push_bind_param::<Array<Nullable<BigInt>>, _>(&self.hold_ids)?;
        out.push_sql(
            ") WITH ORDINALITY AS m(pet_id, kind, quantity, available_change, committed_change, \
             available_after, committed_after, order_id, line_no, reason, actor, request_id, \
             time, held_change, held_after, hold_id, place) \
             WHERE EXISTS (SELECT 1 FROM ledger_opened) ORDER BY m.place",
        );
        Ok(())
    }
}

impl SendHeldBack {
    /// Whether it holds no order, record, movement or event: then it is not sent.
    pub(crate) fn is_empty(&self) -> bool {
        self.order_ids.is_empty()
            && self.records.keys.is_empty()
            && self.replacing.keys.is_empty()
            && self.movements.pet_ids.is_empty()
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
        out.push_bind_param::<Array<Jsonb>, _>(&self.data)?;
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

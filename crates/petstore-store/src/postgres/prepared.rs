//! Statements of the write path written out by hand, so that Diesel prepares them once per
//! connection: Diesel's cache keeps only statements of a static query id, which an `UPDATE`
//! from its query builder, a batch `INSERT` and any SQL literal are not. Uncached, the server
//! parses and plans them on every order (see `sqlite/prepared.rs` for the same on SQLite).

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

//! The repository traits on one PostgreSQL connection inside one transaction: [`PgTx`], with
//! the statements both backends share (`repositories/`) and what PostgreSQL does its own way.
//!
//! Concurrent writers are the normal case here, unlike on SQLite's single writer. Write
//! transactions run at READ COMMITTED and lock what their rule depends on before reading it
//! (`SELECT … FOR UPDATE` on the pet whose stock an order takes, the order being changed, the
//! key being revoked, the subscription being moved on; advisory locks for an idempotency key
//! and for the outbox), so a rule checked inside a transaction still holds when it commits.

use chrono::{DateTime, Utc};
use diesel::dsl::Limit;
use diesel::pg::PgConnection;
use diesel::prelude::*;
use diesel::query_dsl::LoadQuery;
use diesel::query_dsl::methods::LimitDsl;
use diesel::sql_types::{Integer, Text};
use petstore_core::{DomainEvent, EventWriter, RepoResult, TraceParent};

use crate::error::QueryResultExt;
use crate::schema::sql_types::{Json, Time};
use crate::schema::{events, pets};

// Compiled once for each backend, for its `Tx`: the statements are written once.
#[allow(clippy::duplicate_mod, reason = "compiled once per backend")]
#[path = "../repositories/mod.rs"]
mod repositories;

use repositories::LockSpace;

/// One transaction's view of the database. `PgStore` opens the transaction around it.
pub(crate) struct PgTx<'c> {
    pub(crate) conn: &'c mut PgConnection,
    /// Whether this is a write transaction: reads that a rule depends on then lock their rows.
    pub(crate) writing: bool,
}

/// The transaction type the shared statements are compiled for here.
type Tx<'c> = PgTx<'c>;

/// The row `query` finds, if any, locked until the transaction ends in a write transaction
/// (`SELECT … FOR UPDATE`), so that a rule checked on it still holds at the commit.
macro_rules! row_for_update {
    ($tx:expr, $query:expr $(,)?) => {{
        let query = $query;
        if $tx.writing {
            query.for_update().get_result($tx.conn).optional()
        } else {
            query.get_result($tx.conn).optional()
        }
    }};
}
use row_for_update;

/// [`row_for_update!`], with the weaker lock that still lets rows naming this one by foreign
/// key be written (`FOR NO KEY UPDATE`).
macro_rules! row_for_no_key_update {
    ($tx:expr, $query:expr $(,)?) => {{
        let query = $query;
        if $tx.writing {
            query.for_no_key_update().get_result($tx.conn).optional()
        } else {
            query.get_result($tx.conn).optional()
        }
    }};
}
use row_for_no_key_update;

impl PgTx<'_> {
    /// The first `rows` rows of `query`.
    pub(crate) fn page<'q, Q, U>(&mut self, query: Q, rows: i64) -> QueryResult<Vec<U>>
    where
        Q: LimitDsl,
        Limit<Q>: LoadQuery<'q, PgConnection, U>,
    {
        query.limit(rows).load(self.conn)
    }

    /// Sets a pet's stock.
    pub(crate) fn set_stock_row(&mut self, pet_id: i64, stock: i64) -> QueryResult<usize> {
        diesel::update(pets::table.find(pet_id))
            .set(pets::stock.eq(stock))
            .execute(self.conn)
    }

    /// In a write transaction, takes the lock `(space, key)`, held until the transaction ends:
    /// writers asking for the same one take turns.
    pub(crate) fn take_turns(&mut self, space: LockSpace, key: i32) -> RepoResult<()> {
        if self.writing {
            self.lock(space, key)?;
        }
        Ok(())
    }

    /// [`take_turns`](Self::take_turns) for the lock of a name (`name()`).
    pub(crate) fn take_turns_named(
        &mut self,
        space: LockSpace,
        name: impl FnOnce() -> String,
    ) -> RepoResult<()> {
        if self.writing {
            self.lock_name(space, &name())?;
        }
        Ok(())
    }

    /// Takes the transaction-scoped advisory lock `(space, key)`: held until this transaction
    /// ends, by one transaction at a time.
    fn lock(&mut self, space: LockSpace, key: i32) -> RepoResult<()> {
        diesel::sql_query("SELECT pg_advisory_xact_lock($1, $2)")
            .bind::<Integer, _>(space as i32)
            .bind::<Integer, _>(key)
            .execute(self.conn)
            .or_storage()?;
        Ok(())
    }

    /// Takes the transaction-scoped advisory lock of `(space, name)`, by the name's hash
    /// (PostgreSQL's `hashtext`, the same on every node). Two names may share a lock; that
    /// only makes them wait for each other.
    fn lock_name(&mut self, space: LockSpace, name: &str) -> RepoResult<()> {
        diesel::sql_query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
            .bind::<Integer, _>(space as i32)
            .bind::<Text, _>(name)
            .execute(self.conn)
            .or_storage()?;
        Ok(())
    }
}

impl EventWriter for PgTx<'_> {
    /// Appends under the outbox lock, held until the transaction ends. Ids come from a
    /// sequence, and a sequence hands them out in the order transactions ask, not the order
    /// they commit: without the lock, a follower could read event 43 before 42 commits, move
    /// past 42 and never see it. With it, appenders commit in id order, so what a reader sees
    /// is always every event up to some id. The cost: changes that record events commit one
    /// at a time (everything before the append still runs in parallel).
    fn append_events(
        &mut self,
        time: DateTime<Utc>,
        cause: Option<&TraceParent>,
        events: &[DomainEvent],
    ) -> RepoResult<()> {
        if events.is_empty() {
            return Ok(());
        }
        self.lock(LockSpace::Outbox, 0)?;
        let rows: Vec<_> = events
            .iter()
            .map(|event| {
                (
                    events::time.eq(Time(time)),
                    events::event_type.eq(event.event_type().as_str()),
                    events::subject.eq(event.subject()),
                    events::data.eq(Json(event.data())),
                    events::traceparent.eq(cause.map(TraceParent::as_str)),
                )
            })
            .collect();
        diesel::insert_into(events::table)
            .values(&rows)
            .execute(self.conn)
            .or_storage()?;
        Ok(())
    }
}

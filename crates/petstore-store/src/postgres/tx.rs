//! The repository traits on one PostgreSQL connection inside one transaction: [`PgTx`], with
//! the statements both backends share (`repositories/`) and what PostgreSQL does its own way.
//!
//! Concurrent writers are the normal case here, unlike on SQLite's single writer. Write
//! transactions run at READ COMMITTED and lock what their rule depends on before reading it
//! (`SELECT … FOR UPDATE` on the pet whose stock an order takes, the order being changed, the
//! key being revoked, the subscription being moved on; an advisory lock for an idempotency
//! key), so a rule checked inside a transaction still holds when it commits.
//!
//! The outbox takes no lock at all: an event's id is made from the id of the transaction
//! writing it, and the feed shows an event only once every older transaction has ended (see
//! [`EventWriter for PgTx`](PgTx::append_events) and `docs/storage.md`).

use chrono::{DateTime, Utc};
use diesel::dsl::Limit;
use diesel::dsl::sql;
use diesel::pg::PgConnection;
use diesel::prelude::*;
use diesel::query_dsl::LoadQuery;
use diesel::query_dsl::methods::LimitDsl;
use diesel::sql_types::{BigInt, Integer, Text};
use petstore_core::{
    DomainEvent, Event, EventId, EventReader, EventWriter, RepoResult, TraceParent,
};

use crate::error::{QueryResultExt, StoreError};
use crate::records::EventRecord;
use crate::schema::sql_types::{Json, Time};
use crate::schema::{events, pets};
use crate::statements::convert;

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
    /// Events appended so far: the next one's place in this transaction.
    events_written: i64,
}

impl<'c> PgTx<'c> {
    /// A view through `conn`, on which the caller has opened a transaction if `writing`.
    pub(crate) fn new(conn: &'c mut PgConnection, writing: bool) -> Self {
        Self {
            conn,
            writing,
            events_written: 0,
        }
    }
}

/// How many events one transaction may append: the factor between transaction ids and event
/// ids. The SQL below and the migration `feed_in_commit_order` write it out as 65536.
pub(crate) const EVENTS_PER_TRANSACTION: i64 = 1 << 16;

/// The id of this transaction's next event, before its place in the transaction is added:
/// `base + transaction id × 65536`, so that ids grow with transaction ids.
const EVENT_ID_OF_THIS_TRANSACTION: &str =
    "(SELECT base FROM event_feed) + pg_current_xact_id()::text::bigint * 65536 + ";

/// The first id the feed does not show yet: the id the oldest transaction of this database
/// still running would give its first event (or, with none, the next transaction). Every
/// transaction below it has ended, so no event can appear below it later; an event at or
/// above it may still be joined by one of a lower id, and waits.
///
/// "Still running" is as this statement's snapshot saw it (`pg_snapshot_xip`), so that the
/// horizon and the rows read agree. The snapshot spans the whole server; a transaction that
/// `pg_stat_activity` shows in another database cannot write here, and is left out, so that
/// other databases' writers do not hold this feed back. One it cannot place (ended since, or
/// hidden from this role) counts, which only makes the feed wait longer, never skip.
pub(crate) const FEED_HORIZON: &str = "(SELECT base FROM event_feed) + 65536 * COALESCE(\
     (SELECT min(running::text::bigint) FROM pg_snapshot_xip(pg_current_snapshot()) running \
      WHERE running::text::bigint % 4294967296 NOT IN (\
        SELECT backend_xid::text::bigint FROM pg_stat_activity \
        WHERE backend_xid IS NOT NULL AND datname IS DISTINCT FROM current_database())), \
     pg_snapshot_xmax(pg_current_snapshot())::text::bigint)";

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

/// The feed: the events below [`FEED_HORIZON`], those no transaction still running can
/// precede.
impl EventReader for PgTx<'_> {
    fn events_after(&mut self, after: Option<EventId>, limit: u32) -> RepoResult<Vec<Event>> {
        let rows = self
            .page(
                events::table
                    .filter(events::id.gt(after.map_or(0, EventId::get)))
                    .filter(events::id.lt(sql::<BigInt>(FEED_HORIZON)))
                    .order(events::id.asc())
                    .select(EventRecord::as_select()),
                i64::from(limit),
            )
            .or_storage()?;
        convert(rows)
    }

    fn last_event_id(&mut self) -> RepoResult<Option<EventId>> {
        let last: Option<i64> = events::table
            .filter(events::id.lt(sql::<BigInt>(FEED_HORIZON)))
            .select(diesel::dsl::max(events::id))
            .get_result(self.conn)
            .or_storage()?;
        last.map(EventId::new)
            .transpose()
            .map_err(|e| StoreError::Corrupt(e.to_string()).into())
    }
}

impl EventWriter for PgTx<'_> {
    /// Appends with ids made from this transaction's id, taking no lock. A sequence would
    /// hand ids out in the order transactions ask, not the order they commit, and a follower
    /// could then read event 43 before 42 commits, move past 42 and never see it; taking
    /// turns on one lock until commit prevented that, at the cost of every change of the
    /// cluster committing one at a time. Here transactions commit as they will, and the feed
    /// ([`FEED_HORIZON`]) waits for the older ones instead.
    fn append_events(
        &mut self,
        time: DateTime<Utc>,
        cause: Option<&TraceParent>,
        events: &[DomainEvent],
    ) -> RepoResult<()> {
        if events.is_empty() {
            return Ok(());
        }
        let first = self.events_written;
        let written = first + i64::try_from(events.len()).unwrap_or(i64::MAX);
        if written > EVENTS_PER_TRANSACTION {
            return Err(StoreError::TooLarge(format!(
                "one transaction may record at most {EVENTS_PER_TRANSACTION} events"
            ))
            .into());
        }
        let rows: Vec<_> = events
            .iter()
            .zip(first..)
            .map(|(event, place)| {
                (
                    events::id
                        .eq(sql::<BigInt>(EVENT_ID_OF_THIS_TRANSACTION).bind::<BigInt, _>(place)),
                    events::time.eq(Time(time)),
                    events::event_type.eq(event.event_type().as_str()),
                    events::subject.eq(event.subject()),
                    events::data.eq(Json(event.data())),
                    events::traceparent.eq(cause.map(TraceParent::as_str)),
                )
            })
            .collect();
        diesel::insert_into(events::table)
            .values(rows)
            .execute(self.conn)
            .or_storage()?;
        self.events_written = written;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sql_multiplies_transaction_ids_by_the_events_a_transaction_may_write() {
        let factor = EVENTS_PER_TRANSACTION.to_string();
        assert!(EVENT_ID_OF_THIS_TRANSACTION.contains(&factor));
        assert!(FEED_HORIZON.contains(&factor));
        let migration = include_str!(
            "../../../../migrations/postgres/2026-11-25-000004_feed_in_commit_order/up.sql"
        );
        assert!(migration.contains(&factor), "{migration}");
        let store = include_str!("mod.rs");
        assert!(
            store.matches(&factor).count() >= 2,
            "event_id_position, move_event_ids_past"
        );
    }
}

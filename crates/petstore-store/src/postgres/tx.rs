//! The repository traits on one PostgreSQL connection inside one transaction: [`PgTx`], with
//! the statements both backends share (`repositories/`) and what PostgreSQL does its own way.
//!
//! Concurrent writers are the normal case here, unlike on SQLite's single writer. Write
//! transactions run at READ COMMITTED and lock what their rule depends on before reading it
//! (`SELECT … FOR UPDATE` on the pet whose stock an order takes, the order being changed, the
//! key being revoked, the subscription being moved on), so a rule checked inside a
//! transaction still holds when it commits. A create looking up its idempotency key alone
//! takes the key's advisory lock; a burst looks its jobs' keys up at once without one, and
//! the record's primary key lets only one create of a key commit (`held_back.rs`).
//!
//! The feed (`EventReader`, `EventWriter`) is `feed.rs`'s.

use chrono::{DateTime, Utc};
use diesel::dsl::Limit;
use diesel::pg::PgConnection;
use diesel::prelude::*;
use diesel::query_dsl::LoadQuery;
use diesel::query_dsl::methods::LimitDsl;
use diesel::sql_types::{Integer, Text};
use petstore_core::{
    DomainError, IdempotencyReader, IdempotencyRecord, IdempotencyWriter, NewOrder, OwnerId, Price,
    PricedLine, RepoResult,
};

use crate::error::QueryResultExt;
use crate::key_records::KeyRecords;
use crate::known_rows::KnownRows;
use crate::postgres::held_back::HeldBack;
use crate::postgres::prepared::NextOrderId;
use crate::records::MovementColumns;

// Compiled once for each backend, for its `Tx`: the statements are written once.
#[allow(clippy::duplicate_mod, reason = "compiled once per backend")]
#[path = "../repositories/mod.rs"]
pub(super) mod repositories;

use repositories::LockSpace;

/// One transaction's view of the database. `PgStore` opens the transaction around it.
pub(crate) struct PgTx<'c> {
    /// Reached through [`flushed`](PgTx::flushed), which sends held-back writes first.
    connection: &'c mut PgConnection,
    /// Whether this is a write transaction: reads that a rule depends on then lock their rows.
    pub(crate) writing: bool,
    /// Whether it is one statement on its own (`read_one`), outside any transaction.
    alone: bool,
    /// This transaction's id, once a statement returned it (sending held-back events does).
    pub(crate) xid: Option<i64>,
    /// The rows known without a statement: the burst's, where the work is part of one
    /// (`reads.rs`, `burst.rs`), else the transaction's own.
    known: &'c mut KnownRows,
    /// The writes held back until a statement or the commit needs them (`held_back.rs`):
    /// every write transaction has them, a read none.
    held_back: Option<&'c mut HeldBack>,
}

impl<'c> PgTx<'c> {
    /// A read transaction's view through `conn`, inside the transaction the caller opened.
    pub(crate) fn reading(conn: &'c mut PgConnection, known: &'c mut KnownRows) -> Self {
        Self {
            connection: conn,
            writing: false,
            alone: false,
            xid: None,
            known,
            held_back: None,
        }
    }

    /// Whether a read of the feed may stamp first: not in a read-only transaction.
    pub(super) fn stamps(&self) -> bool {
        self.alone || self.writing
    }

    /// A view through `conn` for a single statement, outside any transaction, answering a
    /// read of a row in `known` from there: what a burst fetched after the read was asked
    /// for is as fresh as a statement of its own.
    pub(crate) fn alone(conn: &'c mut PgConnection, known: &'c mut KnownRows) -> Self {
        Self {
            alone: true,
            ..Self::reading(conn, known)
        }
    }

    /// A write transaction's view through `conn`, answering a read of a row in `known`
    /// (locked by this transaction) from there, and holding back in `held_back` the writes
    /// it sends together.
    pub(crate) fn writing(
        conn: &'c mut PgConnection,
        known: &'c mut KnownRows,
        held_back: &'c mut HeldBack,
    ) -> Self {
        Self {
            writing: true,
            held_back: Some(held_back),
            ..Self::reading(conn, known)
        }
    }

    /// Sends what the write holds back, then gives the connection for a statement, which
    /// so sees every write made before it. A failed send is remembered (the burst gives up,
    /// a lone write answers with it); the statement meets the aborted transaction it left.
    pub(crate) fn flushed(&mut self) -> &mut PgConnection {
        if let Some(held_back) = self.held_back.as_deref_mut()
            && let Some(xid) = held_back.send(self.connection)
        {
            self.xid.get_or_insert(xid);
        }
        self.connection
    }

    /// The rows known without a statement.
    pub(crate) fn known(&mut self) -> &mut KnownRows {
        self.known
    }

    /// What the transaction knows of its idempotency keys (`key_records.rs`): a write's,
    /// kept with its held-back writes; a read records no key, and has none.
    pub(crate) fn key_records(&mut self) -> Option<&mut KeyRecords> {
        self.held_back.as_deref_mut().map(HeldBack::keys)
    }
}

/// The transaction type the shared statements are compiled for here.
type Tx<'c> = PgTx<'c>;

/// The row `query` finds, if any, locked until the transaction ends in a write transaction
/// (`SELECT … FOR UPDATE`), so that a rule checked on it still holds at the commit.
macro_rules! row_for_update {
    ($tx:expr, $query:expr $(,)?) => {{
        let query = $query;
        if $tx.writing {
            query.for_update().get_result($tx.flushed()).optional()
        } else {
            query.get_result($tx.flushed()).optional()
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
            query
                .for_no_key_update()
                .get_result($tx.flushed())
                .optional()
        } else {
            query.get_result($tx.flushed()).optional()
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
        query.limit(rows).load(self.flushed())
    }

    /// Sets a pet's stock, held back until the write's end (the pet's row is locked by the
    /// job, so it is there then: `held_back.rs` checks).
    pub(crate) fn set_stock_row(&mut self, pet_id: i64, stock: i64) -> QueryResult<usize> {
        self.held_back()?.set_stock(pet_id, stock);
        Ok(1)
    }

    /// Whether a read locks the rows a rule depends on: in a write transaction.
    pub(crate) fn locks_rows(&self) -> bool {
        self.writing
    }

    /// Holds back lines 2 and on (`lines`) of order `order_id`, itself held back: they go out
    /// with it (`prepared.rs`).
    pub(crate) fn insert_line_rows(
        &mut self,
        order_id: i64,
        lines: &[PricedLine],
    ) -> RepoResult<()> {
        self.held_back().or_storage()?.add_lines(order_id, lines);
        Ok(())
    }

    /// Holds back recording stock movements, until the write's end: they go out with its
    /// orders and events, in the statement that inserts them only once the ledger has begun
    /// (`prepared.rs`).
    pub(crate) fn insert_movement_rows(
        &mut self,
        time: DateTime<Utc>,
        rows: Vec<MovementColumns>,
    ) -> RepoResult<()> {
        self.held_back().or_storage()?.record_movements(time, rows);
        Ok(())
    }

    /// What this write holds back: every write transaction has it; a read has none.
    pub(super) fn held_back(&mut self) -> QueryResult<&mut HeldBack> {
        self.held_back.as_deref_mut().ok_or_else(|| {
            diesel::result::Error::QueryBuilderError("a write outside a write transaction".into())
        })
    }

    /// Holds back placing `new`: its id, in hand from the statement that locked a burst's
    /// pets, or else taken from the sequence now (one round trip, as an insert of its own was).
    pub(crate) fn place_order_row(
        &mut self,
        new: &NewOrder,
        owner: Option<OwnerId>,
        price: Option<Price>,
        line_count: i64,
    ) -> RepoResult<i64> {
        if let Some(id) = self
            .held_back()
            .or_storage()?
            .place_order(new, owner, price, line_count)
        {
            return Ok(id);
        }
        // A new id reads nothing held back: the connection as it is.
        let id: i64 = diesel::select(NextOrderId)
            .get_result(self.connection)
            .or_storage()?;
        let held_back = self.held_back().or_storage()?;
        held_back.add_order_ids([id]);
        held_back
            .place_order(new, owner, price, line_count)
            .ok_or_else(|| DomainError::storage("an order id taken was not in hand"))
    }

    /// In a write transaction, takes the lock `(space, key)`, held until the transaction ends:
    /// writers asking for the same one take turns.
    pub(crate) fn take_turns(&mut self, space: LockSpace, key: i32) -> RepoResult<()> {
        if self.writing {
            self.lock(space, key)?;
        }
        Ok(())
    }

    /// Takes the transaction-scoped advisory lock of `(space, name)`, by the name's hash
    /// (PostgreSQL's `hashtext`, the same on every node). Two names may share a lock; that
    /// only makes them wait for each other.
    fn lock_name(&mut self, space: LockSpace, name: &str) -> RepoResult<()> {
        diesel::sql_query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
            .bind::<Integer, _>(space as i32)
            .bind::<Text, _>(name)
            .execute(self.flushed())
            .or_storage()?;
        Ok(())
    }

    /// Takes the transaction-scoped advisory lock `(space, key)`: held until this transaction
    /// ends, by one transaction at a time.
    fn lock(&mut self, space: LockSpace, key: i32) -> RepoResult<()> {
        diesel::sql_query("SELECT pg_advisory_xact_lock($1, $2)")
            .bind::<Integer, _>(space as i32)
            .bind::<Integer, _>(key)
            .execute(self.flushed())
            .or_storage()?;
        Ok(())
    }
}

/// A record is looked up where the write put it first: held back by an earlier create of the
/// same transaction, then what the burst looked up for the keys its jobs named, then the table
/// (`key_records.rs`).
impl IdempotencyReader for PgTx<'_> {
    fn idempotency_record(
        &mut self,
        owner: OwnerId,
        key: &str,
    ) -> RepoResult<Option<IdempotencyRecord>> {
        if let Some(known) = self.key_records().and_then(|keys| keys.known(owner, key)) {
            return Ok(known);
        }
        if self.writing {
            self.lock_name(LockSpace::IdempotencyKey, &format!("{}:{key}", owner.get()))?;
        }
        self.stored_idempotency_record(owner, key)
    }
}

/// A record is held back with the write's other rows and sent with them (`held_back.rs`),
/// where one whose key another transaction recorded meanwhile fails the write.
impl IdempotencyWriter for PgTx<'_> {
    fn insert_idempotency_record(
        &mut self,
        owner: OwnerId,
        key: &str,
        record: &IdempotencyRecord,
    ) -> RepoResult<()> {
        self.held_back()
            .or_storage()?
            .keys()
            .hold(owner, key, record.clone());
        Ok(())
    }

    fn purge_idempotency_records(&mut self, before: DateTime<Utc>) -> RepoResult<()> {
        self.delete_idempotency_records_before(before)
    }
}

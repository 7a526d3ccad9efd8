//! The repository traits on one SQLite connection inside one transaction: [`SqliteTx`], with
//! the statements both backends share (`repositories/`) and what SQLite does its own way.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::query_dsl::LoadQuery;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel::sqlite::SqliteConnection;
use petstore_core::{
    Cause, DomainError, DomainEvent, Event, EventId, EventReader, EventWriter, IdempotencyReader,
    IdempotencyRecord, IdempotencyWriter, LedgerReader, NewOrder, OwnerId, Price, PricedLine,
    RECORD_LIFETIME, RepoResult, TraceParent, Transaction,
};

use crate::error::{QueryResultExt, Rule, StoreError, Violation};
use crate::key_records::KeyRecords;
use crate::known_rows::KnownRows;
use crate::records::{EventColumns, MovementColumns, actor_column};
use crate::schema::sql_types::Time;
use crate::sqlite::ledger_begun::LedgerBegun;
use crate::sqlite::limit::{DefaultPage, Limited, limited};
use crate::sqlite::prepared::{
    AppendEvents, CountLine, InsertLines, LineColumns, PlaceOrder, RecordAnswer, RecordMovements,
    ReplaceAnswer, SetStock, SetStockCounting, execute_rows,
};
use crate::statements::refuse;

// Compiled once for each backend, for its `Tx`: the statements are written once.
#[allow(clippy::duplicate_mod, reason = "compiled once per backend")]
#[path = "../repositories/mod.rs"]
mod repositories;

use repositories::LockSpace;

/// One transaction's view of the database. `SqliteStore` opens the transaction around it.
pub(crate) struct SqliteTx<'c> {
    conn: &'c mut SqliteConnection,
    /// The rows this transaction read and may serve again without a statement.
    known: KnownRows,
    /// The idempotency keys it found a stored record of (`key_records.rs`).
    keys: KeyRecords,
    /// Whether the store has seen the stock ledger begun.
    ledger: &'c LedgerBegun,
    /// Lines 2 and on written, not yet counted into their pets' rows (`insert_line_rows`).
    uncounted: Vec<CountLine>,
    /// Why counting them failed, for the write's end to answer with.
    count_failed: Option<DomainError>,
}

impl<'c> SqliteTx<'c> {
    /// A view through `conn`, inside the transaction the caller opened, of a store that has
    /// seen the ledger begun or not.
    pub(crate) fn new(conn: &'c mut SqliteConnection, ledger: &'c LedgerBegun) -> Self {
        // What the store has seen of the ledger is known without a statement (`ledger_open`).
        let begun = ledger.seen().then_some(true);
        Self {
            conn,
            known: KnownRows::locked(Vec::new(), begun),
            keys: KeyRecords::default(),
            ledger,
            uncounted: Vec::new(),
            count_failed: None,
        }
    }

    /// Runs `work` as a write through `conn`, inside the transaction the caller opened, and
    /// counts the lines it wrote that no statement counted yet: a write's outcome is whole.
    pub(crate) fn write<T>(
        conn: &'c mut SqliteConnection,
        ledger: &'c LedgerBegun,
        work: impl FnOnce(&mut dyn Transaction) -> RepoResult<T>,
    ) -> RepoResult<T> {
        let mut tx = Self::new(conn, ledger);
        let value = work(&mut tx)?;
        tx.count_lines();
        tx.count_failed.map_or(Ok(value), Err)
    }
}

impl SqliteTx<'_> {
    /// The connection, for a statement, once the lines written are counted into their pets'
    /// rows: the statement sees the rows as they are. Named as PostgreSQL's, which sends what
    /// its write holds back first.
    pub(crate) fn flushed(&mut self) -> &mut SqliteConnection {
        self.count_lines();
        self.conn
    }

    /// Counts each line not yet counted into its pet's row, with a statement each; a failure
    /// is kept for the write's end (`write`).
    fn count_lines(&mut self) {
        for line in std::mem::take(&mut self.uncounted) {
            // The use case locked the pet before placing the order: it is there.
            let counted = match line.execute(self.conn) {
                Ok(1) => continue,
                Ok(_) => DomainError::storage("a checkout line's pet was gone under its lock"),
                Err(error) => StoreError::from(error).into(),
            };
            self.count_failed.get_or_insert(counted);
        }
    }

    /// The rows known without a statement.
    pub(crate) fn known(&mut self) -> &mut KnownRows {
        &mut self.known
    }

    /// What the transaction knows of its idempotency keys (`key_records.rs`).
    pub(crate) fn key_records(&mut self) -> Option<&mut KeyRecords> {
        Some(&mut self.keys)
    }
}

/// The transaction type the shared statements are compiled for here.
type Tx<'c> = SqliteTx<'c>;

/// The row `query` finds, if any. A write transaction here holds the database's one write
/// lock from its start (`BEGIN IMMEDIATE`), so no row needs a lock of its own.
macro_rules! row_for_update {
    ($tx:expr, $query:expr $(,)?) => {
        $query.get_result($tx.flushed()).optional()
    };
}
use row_for_update;
use row_for_update as row_for_no_key_update;

impl SqliteTx<'_> {
    /// The first `rows` rows of `query`, with the `LIMIT` written into the SQL rather than
    /// bound, so SQLite keeps the statement's plan (`limit.rs`).
    pub(crate) fn page<'q, Q, U>(&mut self, query: Q, rows: i64) -> QueryResult<Vec<U>>
    where
        Limited<Q>: LoadQuery<'q, SqliteConnection, U>,
        DefaultPage<Q>: LoadQuery<'q, SqliteConnection, U>,
    {
        limited(query, rows).load(self.flushed())
    }

    /// Nothing to take: the one writer's transaction holds the whole database.
    pub(crate) fn take_turns(&mut self, _space: LockSpace, _key: i32) -> RepoResult<()> {
        Ok(())
    }

    /// Whether a read locks the rows it reads: never here, where the one writer's transaction
    /// holds the whole database.
    pub(crate) fn locks_rows(&self) -> bool {
        false
    }

    /// Inserts an order of `line_count` lines (its first in the row), at once (SQLite's one
    /// writer has no round trips to save): its id.
    pub(crate) fn place_order_row(
        &mut self,
        new: &NewOrder,
        owner: Option<OwnerId>,
        price: Option<Price>,
        line_count: i64,
    ) -> RepoResult<i64> {
        let NewOrder {
            pet_id,
            quantity,
            ship_date,
        } = *new;
        PlaceOrder {
            pet_id: pet_id.get(),
            quantity: i64::from(quantity.get()),
            ship_date: ship_date.map(Time),
            owner: owner.map(OwnerId::get),
            unit_amount: price.map(|price| price.amount.get()),
            currency: price.map(|price| price.currency.code()),
            line_count,
        }
        .get_result(self.flushed())
        .map_err(|e| {
            refuse(e, |v| {
                (v == Violation::Rule(Rule::UnknownPet))
                    .then_some(DomainError::UnknownPet { id: pet_id })
            })
        })
    }

    /// Inserts lines 2 and on (`lines`) of order `order_id`, inserted before them, in one
    /// statement (`InsertLines`). Each is counted into its pet's open orders and committed
    /// units by the statement that sets the pet's stock next (`set_stock_row`), which every
    /// line placed from stock is followed by, or else before the next statement of another
    /// kind or at the write's end (`flushed`, `write`).
    pub(crate) fn insert_line_rows(
        &mut self,
        order_id: i64,
        lines: &[PricedLine],
    ) -> RepoResult<()> {
        let mut rows = Vec::with_capacity(lines.len());
        let mut counts = Vec::with_capacity(lines.len());
        for (line, line_no) in lines.iter().zip(2i64..) {
            let (pet_id, quantity) = (line.pet_id.get(), i64::from(line.quantity.get()));
            rows.push(LineColumns {
                line_no,
                pet_id,
                quantity,
                unit_amount: line.price.map(|p| p.amount.get()),
                currency: line.price.map(|p| p.currency.code()),
            });
            counts.push(CountLine { pet_id, quantity });
        }
        // Not through `flushed`: lines an earlier statement wrote wait to be counted with
        // their pets' stock, as these do.
        execute_rows(InsertLines { order_id, rows }, self.conn).or_storage()?;
        self.uncounted.extend(counts);
        Ok(())
    }

    /// Records stock movements, all in one statement (`RecordMovements`), once the ledger has
    /// begun: before, none is recorded.
    pub(crate) fn insert_movement_rows(
        &mut self,
        time: DateTime<Utc>,
        rows: Vec<MovementColumns>,
    ) -> RepoResult<()> {
        if !self.ledger_begun()? {
            return Ok(());
        }
        let movements = RecordMovements {
            time: Time(time),
            rows,
        };
        execute_rows(movements, self.flushed()).or_storage()?;
        Ok(())
    }

    /// Whether the stock ledger has begun (`ledger_open`, asked of the database until the
    /// store has seen it so), noted for the store's later transactions. The writer's
    /// transaction holds the file, so no upgrade can finish inside it.
    fn ledger_begun(&mut self) -> RepoResult<bool> {
        let begun = self.ledger_open()?;
        if begun {
            self.ledger.saw();
        }
        Ok(begun)
    }

    /// Sets a pet's stock with a statement prepared once: every order changes one. A line of
    /// the pet not yet counted is counted by the same statement; the other pets' lines wait,
    /// since the statement reads no row but this pet's.
    pub(crate) fn set_stock_row(&mut self, pet_id: i64, stock: i64) -> QueryResult<usize> {
        match self.uncounted.iter().position(|line| line.pet_id == pet_id) {
            Some(at) => {
                let line = self.uncounted.swap_remove(at);
                SetStockCounting { line, stock }.execute(self.conn)
            }
            None => SetStock { pet_id, stock }.execute(self.conn),
        }
    }
}

/// The feed: every event there is, since ids come in commit order here (see `append_events`).
impl EventReader for SqliteTx<'_> {
    fn events_after(&mut self, after: Option<EventId>, limit: u32) -> RepoResult<Vec<Event>> {
        self.stored_events_after(after, limit)
    }

    fn last_event_id(&mut self) -> RepoResult<Option<EventId>> {
        self.stored_last_event_id()
    }
}

impl EventWriter for SqliteTx<'_> {
    /// Ids come in the order writers append, and writers here take turns at the database, so
    /// a reader always sees every event up to some id.
    fn append_events(
        &mut self,
        time: DateTime<Utc>,
        cause: &Cause,
        events: &[DomainEvent],
    ) -> RepoResult<()> {
        if events.is_empty() {
            return Ok(());
        }
        let actor = actor_column(cause)?;
        let events = AppendEvents {
            time: Time(time),
            trace: cause.trace.as_ref().map(TraceParent::as_str),
            actor: actor.as_deref(),
            rows: events.iter().map(EventColumns::of).collect(),
        };
        execute_rows(events, self.flushed()).or_storage()?;
        Ok(())
    }
}

impl IdempotencyReader for SqliteTx<'_> {
    fn idempotency_record(
        &mut self,
        owner: OwnerId,
        key: &str,
    ) -> RepoResult<Option<IdempotencyRecord>> {
        self.stored_idempotency_record(owner, key)
    }
}

impl IdempotencyWriter for SqliteTx<'_> {
    /// A key's first record is inserted; one whose expired record was found is written over
    /// it, and not over a fresh one (only a writer that did not look first could meet one:
    /// SQLite's writers take turns). The plain insert needs no statement journal, where the
    /// upsert writes one.
    fn insert_idempotency_record(
        &mut self,
        owner: OwnerId,
        key: &str,
        record: &IdempotencyRecord,
    ) -> RepoResult<()> {
        let IdempotencyRecord {
            fingerprint,
            response,
            recorded_at,
        } = record;
        let answer = RecordAnswer {
            owner: owner.get(),
            key,
            fingerprint,
            response,
            recorded_at: Time(*recorded_at),
        };
        let written = if self.keys.replaces(owner, key) {
            ReplaceAnswer {
                answer,
                expired_before: Time(*recorded_at - RECORD_LIFETIME),
            }
            .execute(self.flushed())
        } else {
            answer.execute(self.flushed())
        };
        let written = written.map_err(|error| match error {
            DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _) => {
                StoreError::KeyRecorded
            }
            other => StoreError::from(other),
        })?;
        if written == 0 {
            return Err(StoreError::KeyRecorded.into());
        }
        Ok(())
    }

    fn purge_idempotency_records(&mut self, before: DateTime<Utc>) -> RepoResult<()> {
        self.delete_idempotency_records_before(before)
    }
}

//! Group commit on the single writer connection.
//!
//! SQLite has one writer, and a durable commit waits for the disk (`fsync`). Writes that arrive
//! while another is running share one transaction and one commit instead of taking turns at the
//! disk:
//!
//! 1. A writer takes the connection (waiting at most the configured time, else `Unavailable`).
//!    If no transaction is open, it begins one (`BEGIN IMMEDIATE`).
//! 2. It runs its work inside a savepoint: work that fails (or panics) is rolled back to the
//!    savepoint alone, so every write keeps its own answer and its own failure.
//! 3. If other writers are waiting (and the batch is not full), it hands the open transaction
//!    to the next one; otherwise it commits.
//! 4. Every writer of the batch waits for that commit before returning: nothing is acknowledged
//!    before it is durable, and if the commit fails, every writer of the batch reports it.
//!
//! The work itself runs on its caller's thread: closures borrow their caller's data and never
//! cross threads.
//!
//! A thread that runs many writes one after another (the HTTP layer's writer thread takes
//! every write queued at once) can instead hold the batch for all of them
//! ([`GroupWriter::sharing_writes`]): each write runs in its savepoint and returns at once, and
//! the thread commits once after the last. Nothing waits for a turn or is woken per write; the
//! caller acknowledges none of them before that commit.
//!
//! The writer also knows whether the database takes writes: a full disk, a read-only file or
//! a failing disk marks it failing until a write commits again, and `/readyz` probes it with
//! a write of its own until then (see [`GroupWriter::probe`]).

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use diesel::RunQueryDsl;
use diesel::connection::{AnsiTransactionManager, TransactionManager};
use diesel::result::QueryResult;
use diesel::sqlite::SqliteConnection;
use petstore_core::{DomainError, Failure, RepoResult, Transaction};

use crate::config::StoreConfig;
use crate::error::{StoreError, is_disk_failure};
use crate::sqlite::connect;
use crate::sqlite::repositories::SqliteTx;

/// Writes that may share one commit, at most.
const MAX_BATCH: usize = 64;

/// The writer connection and the batch its open transaction belongs to.
pub(crate) struct GroupWriter {
    state: Mutex<State>,
    turn: Condvar,
    wait: Duration,
    config: StoreConfig,
    writes: AtomicU64,
    commits: AtomicU64,
    health: Mutex<Health>,
}

/// Whether the database has taken writes lately.
#[derive(Debug, Clone, Copy)]
enum Health {
    /// No write has committed since the store opened: a file opened read-only looks fine to
    /// every read, so readiness proves it with a write first.
    Unproven,
    /// The last probe committed, and no write has failed for the disk's sake since. (A
    /// client's commit proves less: on a connection SQLite opened read-only, a write that
    /// changed no row commits fine.)
    Writable,
    /// A write failed because of the disk or the file, not the request.
    Failing,
}

struct State {
    /// `None` while a writer uses it.
    conn: Option<SqliteConnection>,
    /// Writers waiting for the connection.
    waiting: usize,
    /// The open transaction, if any.
    batch: Option<Arc<Batch>>,
    /// Writers that joined it.
    members: usize,
}

/// One transaction shared by several writes, and its outcome.
#[derive(Default)]
struct Batch {
    outcome: Mutex<Option<Result<(), DomainError>>>,
    done: Condvar,
    /// Set when a savepoint could not be closed: the transaction's state is unknown, so the
    /// batch is rolled back instead of committed.
    broken: AtomicBool,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section here leaves the state consistent before it can panic.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Batch {
    fn finish(&self, outcome: Result<(), DomainError>) {
        *lock(&self.outcome) = Some(outcome);
        self.done.notify_all();
    }

    fn wait(&self) -> Result<(), DomainError> {
        let mut outcome = lock(&self.outcome);
        loop {
            if let Some(result) = outcome.as_ref() {
                return result.clone();
            }
            outcome = self
                .done
                .wait(outcome)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// The batch a thread holds in [`GroupWriter::sharing_writes`], and for which writer (another
/// writer's writes on the thread take their turns as usual).
struct Held {
    owner: usize,
    batch: Arc<Batch>,
    /// `None` while a write uses it: a write made from inside that one waits for its turn
    /// like any other.
    conn: Option<SqliteConnection>,
}

thread_local! {
    static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
    /// Why [`GroupWriter::sharing_writes`] on this thread could not take the batch, for which
    /// writer: its writes fail at once with that, instead of each waiting as long again.
    static REFUSED: RefCell<Option<(usize, DomainError)>> = const { RefCell::new(None) };
}

fn refusal(owner: usize) -> Option<DomainError> {
    REFUSED.with(|refused| {
        refused
            .borrow()
            .as_ref()
            .filter(|(writer, _)| *writer == owner)
            .map(|(_, error)| error.clone())
    })
}

fn holds(owner: usize) -> bool {
    HELD.with(|held| {
        held.borrow()
            .as_ref()
            .is_some_and(|held| held.owner == owner)
    })
}

/// The connection and batch this thread holds for writer `owner`, if it holds them and no
/// write uses them now. Give the connection back with [`put_back_held`].
fn take_held(owner: usize) -> Option<(SqliteConnection, Arc<Batch>)> {
    HELD.with(|held| {
        let mut held = held.borrow_mut();
        let held = held.as_mut().filter(|held| held.owner == owner)?;
        let conn = held.conn.take()?;
        Some((conn, Arc::clone(&held.batch)))
    })
}

fn put_back_held(conn: SqliteConnection) {
    HELD.with(|held| {
        if let Some(held) = held.borrow_mut().as_mut() {
            held.conn = Some(conn);
        }
    });
}

type Manager = AnsiTransactionManager;

// Transactions and savepoints go through Diesel's transaction manager, so that Diesel's own
// nested transactions (it inserts several rows at once inside one) become savepoints too.
fn step(result: QueryResult<()>) -> Result<(), DomainError> {
    result.map_err(|e| StoreError::from(e).into())
}

fn begin_immediate(conn: &mut SqliteConnection) -> Result<(), DomainError> {
    step(Manager::begin_transaction_sql(conn, "BEGIN IMMEDIATE"))
}

/// Opens a savepoint (a nested level) or, at depth 0, a transaction.
fn begin(conn: &mut SqliteConnection) -> Result<(), DomainError> {
    step(<Manager as TransactionManager<SqliteConnection>>::begin_transaction(conn))
}

/// Releases the innermost savepoint or, at depth 1, commits.
fn commit(conn: &mut SqliteConnection) -> Result<(), DomainError> {
    step(<Manager as TransactionManager<SqliteConnection>>::commit_transaction(conn))
}

/// Rolls back the innermost level.
fn rollback(conn: &mut SqliteConnection) -> Result<(), DomainError> {
    step(<Manager as TransactionManager<SqliteConnection>>::rollback_transaction(conn))
}

/// How many transaction levels are open, or `None` if Diesel's manager is broken.
fn depth(conn: &mut SqliteConnection) -> Option<u32> {
    <Manager as TransactionManager<SqliteConnection>>::transaction_manager_status_mut(conn)
        .transaction_depth()
        .ok()
        .map(|depth| depth.map_or(0, |d| d.get()))
}

/// Rolls back every level above `level` (a panic may have left Diesel's own levels open).
fn unwind_to(conn: &mut SqliteConnection, level: u32) -> Result<(), DomainError> {
    loop {
        match depth(conn) {
            Some(open) if open > level => rollback(conn)?,
            Some(_) => return Ok(()),
            None => {
                return Err(DomainError::Storage(
                    "the transaction manager is broken".into(),
                ));
            }
        }
    }
}

/// What counts a store's writes and commits, for metrics and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterStats {
    /// Writes run.
    pub writes: u64,
    /// Transactions committed (fewer than writes when writes were grouped).
    pub commits: u64,
}

impl GroupWriter {
    pub(crate) fn new(conn: SqliteConnection, config: &StoreConfig) -> Self {
        Self {
            state: Mutex::new(State {
                conn: Some(conn),
                waiting: 0,
                batch: None,
                members: 0,
            }),
            turn: Condvar::new(),
            wait: config.connection_timeout,
            config: config.clone(),
            writes: AtomicU64::new(0),
            commits: AtomicU64::new(0),
            health: Mutex::new(Health::Unproven),
        }
    }

    /// Records a failure if the disk or the file caused it.
    fn notice(&self, error: &DomainError) {
        if is_disk_failure(error) {
            *lock(&self.health) = Health::Failing;
        }
    }

    fn is_failing(&self) -> bool {
        matches!(*lock(&self.health), Health::Failing)
    }

    /// `Ok` once a probe has committed and no write has failed for the disk's sake since.
    /// Until then, runs a write of its own (one row of `write_probe`), so that an operator's fix
    /// shows without waiting for a client to write.
    pub(crate) fn probe(&self) -> Result<(), DomainError> {
        if matches!(*lock(&self.health), Health::Writable) {
            return Ok(());
        }
        self.run(|conn| {
            diesel::sql_query(
                "INSERT INTO write_probe (id, probed_at) VALUES (1, CURRENT_TIMESTAMP) \
                 ON CONFLICT (id) DO UPDATE SET probed_at = excluded.probed_at",
            )
            .execute(conn)
            .map(drop)
            .map_err(|e| StoreError::from(e).into())
        })?;
        *lock(&self.health) = Health::Writable;
        Ok(())
    }

    pub(crate) fn stats(&self) -> WriterStats {
        WriterStats {
            writes: self.writes.load(Ordering::Relaxed),
            commits: self.commits.load(Ordering::Relaxed),
        }
    }

    /// Writers waiting for the connection now.
    pub(crate) fn waiting(&self) -> usize {
        lock(&self.state).waiting
    }

    /// Whether the connection is free now (for the pool gauges).
    pub(crate) fn is_idle(&self) -> bool {
        lock(&self.state).conn.is_some()
    }

    /// Runs `work` in the shared transaction, in a savepoint of its own; returns once the
    /// transaction it joined has committed (or failed).
    pub(crate) fn write<T>(
        &self,
        work: impl FnOnce(&mut dyn Transaction) -> RepoResult<T>,
    ) -> RepoResult<T> {
        self.run(|conn| work(&mut SqliteTx { conn }))
    }

    /// [`write`](Self::write) on the bare connection.
    fn run<T>(&self, work: impl FnOnce(&mut SqliteConnection) -> RepoResult<T>) -> RepoResult<T> {
        if let Some(refused) = refusal(self.identity()) {
            return Err(refused);
        }
        if let Some((mut conn, batch)) = take_held(self.identity()) {
            let outcome = self.in_savepoint(&mut conn, &batch, work);
            put_back_held(conn);
            // The thread holding the batch commits it after its last write.
            return match outcome {
                Err(panic) => resume_unwind(panic),
                Ok(result) => result.and_then(|refused_or_value| refused_or_value),
            };
        }
        let (mut conn, batch) = self.join()?;
        let outcome = self.in_savepoint(&mut conn, &batch, work);
        let shared = self.leave(conn, &batch);
        match outcome {
            Err(panic) => resume_unwind(panic),
            Ok(Err(savepoint_failed)) => Err(savepoint_failed),
            Ok(Ok(Err(refused))) => Err(refused),
            Ok(Ok(Ok(value))) => shared.map(|()| value),
        }
    }

    /// Runs `work` in a savepoint of its own on the batch's connection, and leaves the
    /// connection at the batch's level (1): the savepoint kept if `work` succeeded, undone if
    /// it failed or panicked. A savepoint that cannot be closed breaks the batch.
    fn in_savepoint<T>(
        &self,
        conn: &mut SqliteConnection,
        batch: &Batch,
        work: impl FnOnce(&mut SqliteConnection) -> RepoResult<T>,
    ) -> std::thread::Result<Result<RepoResult<T>, DomainError>> {
        self.writes.fetch_add(1, Ordering::Relaxed);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            begin(conn)?;
            Ok(work(conn))
        }));
        if let Ok(Err(error) | Ok(Err(error))) = &outcome {
            self.notice(error);
        }
        let closed = match &outcome {
            Ok(Ok(Ok(_))) => unwind_to(conn, 2).and_then(|()| commit(conn)),
            _ => unwind_to(conn, 1),
        };
        if closed.is_err() || depth(conn) != Some(1) {
            batch.broken.store(true, Ordering::Relaxed);
        }
        outcome
    }

    /// Runs `writes`, holding the writer's batch on this thread meanwhile: every write of
    /// this writer that `writes` makes on this thread runs in its own savepoint of that batch
    /// and returns **before the batch commits**; the batch commits (or is handed to writers
    /// waiting on other threads, and commits with theirs) once `writes` returns. The result is
    /// that commit's: if it fails, every write `writes` made is lost, and the caller must
    /// report that failure for each of them, not the values they returned. A write that
    /// failed was rolled back to its savepoint alone, as ever.
    ///
    /// So the caller must not acknowledge a write, or let anything be seen to depend on it,
    /// before this returns. Reads of this writer's store that `writes` makes on this thread
    /// run on the batch's connection ([`lend_held`](Self::lend_held)) and see its writes;
    /// other connections do not see them before the commit.
    ///
    /// If the batch cannot be taken (the connection stayed busy for the connection time-out,
    /// `BEGIN` failed), `writes` runs anyway and each of its writes fails at once with that
    /// error (rather than each waiting as long again, one after another); the result is then
    /// `Ok`, since each write reports its own failure.
    pub(crate) fn sharing_writes(&self, writes: impl FnOnce()) -> Result<(), DomainError> {
        let owner = self.identity();
        if holds(owner) {
            // Nested: the enclosing call commits.
            writes();
            return Ok(());
        }
        let (conn, batch) = match self.join() {
            Ok(taken) => taken,
            Err(error) => {
                let outer = REFUSED.with(|refused| refused.replace(Some((owner, error))));
                let ran = catch_unwind(AssertUnwindSafe(writes));
                REFUSED.with(|refused| refused.replace(outer));
                if let Err(panic) = ran {
                    resume_unwind(panic);
                }
                return Ok(());
            }
        };
        let outer = HELD.with(|held| {
            held.replace(Some(Held {
                owner,
                batch: Arc::clone(&batch),
                conn: Some(conn),
            }))
        });
        let ran = catch_unwind(AssertUnwindSafe(writes));
        let held = HELD.with(|held| held.replace(outer));
        // Every write puts the connection back before it returns (panics in the work are
        // caught before that), so it is here; should it not be, the batch is lost and a new
        // connection takes its place.
        let conn = match held.and_then(|held| held.conn) {
            Some(conn) => Some(conn),
            None => {
                batch.broken.store(true, Ordering::Relaxed);
                connect(&self.config).ok()
            }
        };
        let outcome = match conn {
            Some(conn) => self.leave(conn, &batch),
            None => {
                // Writers go on waiting for a connection, and time out, until a restart.
                let mut state = lock(&self.state);
                state.batch = None;
                state.members = 0;
                drop(state);
                let error = DomainError::Storage("the writer connection was lost".into());
                batch.finish(Err(error.clone()));
                Err(error)
            }
        };
        if let Err(panic) = ran {
            resume_unwind(panic);
        }
        outcome
    }

    /// The connection of the batch this thread holds, if it holds one and no write uses it:
    /// reads made while holding it run on it, so that they see the writes made before them
    /// (a use case that reads after it wrote, say), which no other connection sees before
    /// the commit. Give it back with [`give_back_held`](Self::give_back_held).
    pub(crate) fn lend_held(&self) -> Option<SqliteConnection> {
        take_held(self.identity()).map(|(conn, _)| conn)
    }

    /// Gives back what [`lend_held`](Self::lend_held) lent.
    pub(crate) fn give_back_held(&self, conn: SqliteConnection) {
        put_back_held(conn);
    }

    /// Whether a [`sharing_writes`](Self::sharing_writes) on this thread holds the batch.
    pub(crate) fn is_held_here(&self) -> bool {
        holds(self.identity())
    }

    /// Which writer this is, for the batch a thread holds.
    fn identity(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    /// Takes the connection, joining the open transaction or beginning one.
    fn join(&self) -> Result<(SqliteConnection, Arc<Batch>), DomainError> {
        let deadline = Instant::now() + self.wait;
        let mut state = lock(&self.state);
        state.waiting += 1;
        let mut conn = loop {
            if let Some(conn) = state.conn.take() {
                break conn;
            }
            let now = Instant::now();
            if now >= deadline {
                state.waiting -= 1;
                return Err(DomainError::Unavailable(Failure::new(format!(
                    "the writer connection stayed busy for {:?}",
                    self.wait
                ))));
            }
            state = self
                .turn
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        };
        state.waiting -= 1;
        state.members += 1;
        if let Some(batch) = &state.batch {
            return Ok((conn, Arc::clone(batch)));
        }
        let batch = Arc::new(Batch::default());
        state.batch = Some(Arc::clone(&batch));
        drop(state);
        if self.is_failing() {
            // A connection SQLite opened read-only stays so after the file is made writable,
            // and one that failed on the disk may be stuck: a new batch starts on a new one.
            if let Ok(fresh) = connect(&self.config) {
                conn = fresh;
            }
        }
        // Begun outside the lock: it may wait for another process's lock (busy_timeout), and
        // nobody can use the connection meanwhile anyway.
        if let Err(error) = begin_immediate(&mut conn) {
            self.notice(&error);
            let mut state = lock(&self.state);
            state.batch = None;
            state.members = 0;
            state.conn = Some(conn);
            drop(state);
            self.turn.notify_one();
            batch.finish(Err(error.clone()));
            return Err(error);
        }
        Ok((conn, batch))
    }

    /// Hands the open transaction to a waiting writer, or commits it; then waits for the
    /// batch's outcome.
    fn leave(&self, mut conn: SqliteConnection, batch: &Arc<Batch>) -> Result<(), DomainError> {
        let mut state = lock(&self.state);
        let broken = batch.broken.load(Ordering::Relaxed);
        if !broken && state.waiting > 0 && state.members < MAX_BATCH {
            state.conn = Some(conn);
            drop(state);
            self.turn.notify_one();
            return batch.wait();
        }
        state.batch = None;
        state.members = 0;
        drop(state);
        // The commit (and its fsync) runs outside the lock: writers arriving meanwhile queue
        // up and form the next batch.
        let outcome = if broken {
            let _ = unwind_to(&mut conn, 0);
            Err(DomainError::Storage(
                "a savepoint could not be closed; the batch was rolled back".into(),
            ))
        } else {
            match commit(&mut conn) {
                Ok(()) => {
                    self.commits.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                }
                Err(error) => {
                    self.notice(&error);
                    let _ = unwind_to(&mut conn, 0);
                    Err(error)
                }
            }
        };
        if depth(&mut conn) != Some(0) {
            // Diesel's manager lost track (a failed commit or rollback): start afresh.
            if let Ok(fresh) = connect(&self.config) {
                conn = fresh;
            }
        }
        batch.finish(outcome.clone());
        lock(&self.state).conn = Some(conn);
        self.turn.notify_one();
        outcome
    }
}

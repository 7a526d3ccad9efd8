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
//! A writer's time with the connection is a [`Turn`]: a direct write (`Store::write` from any
//! thread) is a turn of one write; the executor's writer thread takes one turn for every write
//! queued at once (`executor.rs`), runs each in its savepoint, and leaves once after the last.
//! Either way the turn joins or begins the one open batch, and whoever leaves last commits it:
//! there is one way writes share a commit.
//!
//! The writer also knows whether the database takes writes: a full disk, a read-only file or
//! a failing disk marks it failing until a write commits again, and `/readyz` probes it with
//! a write of its own until then (see [`GroupWriter::probe`]).
//!
//! A commit the disk failed to sync is different: its frames may be in the log file, and the
//! next process to open the file replays them, unless a later commit of this process writes
//! over them first. Its outcome is unknown, and every write of its batch is answered so
//! (`OutcomeUnknown`); and to keep that outcome from changing under the clients' feet, the
//! writer stops: no write is taken until the process restarts, and `/readyz` says not ready.
//! PostgreSQL answers a failed `fsync` the same way (it stops, and recovers from its log).

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel::sqlite::SqliteConnection;
use petstore_core::{DomainError, Failure, RepoResult};

use crate::config::StoreConfig;
use crate::sqlite::connect;
use crate::stats::WriterStats;

mod health;
mod savepoints;
mod turn;

use health::Health;
use savepoints::{begin, begin_immediate, commit, depth, step, unwind_to};
pub(crate) use turn::Turn;

/// How much sooner than the `busy_timeout` a turn's deadline must be for its `BEGIN` to wait
/// less: below it, a write may wait this much longer than its deadline, which saves two
/// statements a burst when nothing waits for long.
const BUSY_SLACK: Duration = Duration::from_millis(100);

/// Writes that may share one commit, at most.
pub(crate) const MAX_BATCH: usize = 64;

/// The writer connection and the batch its open transaction belongs to.
pub(crate) struct GroupWriter {
    state: Mutex<State>,
    turn: Condvar,
    wait: Duration,
    config: StoreConfig,
    writes: AtomicU64,
    commits: AtomicU64,
    /// Bursts whose writes were undone together and ran again, each in a savepoint.
    reruns: AtomicU64,
    health: Mutex<Health>,
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
            reruns: AtomicU64::new(0),
            health: Mutex::new(Health::Unproven),
        }
    }

    pub(crate) fn stats(&self) -> WriterStats {
        WriterStats {
            writes: self.writes.load(Ordering::Relaxed),
            commits: self.commits.load(Ordering::Relaxed),
            reruns: self.reruns.load(Ordering::Relaxed),
        }
    }

    /// How long a write may wait for the writer, in all.
    pub(crate) fn wait(&self) -> Duration {
        self.wait
    }

    /// Writers waiting for the connection now.
    pub(crate) fn waiting(&self) -> usize {
        lock(&self.state).waiting
    }

    /// Whether the connection is free now (for the pool gauges).
    pub(crate) fn is_idle(&self) -> bool {
        lock(&self.state).conn.is_some()
    }

    /// Runs `work` on the connection in a turn of its own (one savepoint of the shared
    /// transaction); returns once the transaction it joined has committed (or failed).
    pub(crate) fn run<T>(
        self: &Arc<Self>,
        work: impl FnOnce(&mut SqliteConnection) -> RepoResult<T>,
    ) -> RepoResult<T> {
        let mut turn = self.turn_by(Instant::now() + self.wait)?;
        let outcome = turn.savepoint(work);
        let shared = turn.finish();
        match outcome {
            Err(panic) => resume_unwind(panic),
            Ok(Err(savepoint_failed)) => Err(savepoint_failed),
            Ok(Ok(Err(refused))) => Err(refused),
            Ok(Ok(Ok(value))) => shared.map(|()| value),
        }
    }

    /// Takes the connection for a turn, by `deadline`: waits for it, and joins the open batch
    /// or begins one (which may wait for another process's lock, until `deadline` too).
    pub(crate) fn turn_by(self: &Arc<Self>, deadline: Instant) -> Result<Turn, DomainError> {
        let (conn, batch, began) = self.join(deadline)?;
        Ok(Turn {
            writer: Arc::clone(self),
            conn: Some(conn),
            batch,
            began,
        })
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

    /// Runs `work` on the batch's connection as it is, with no savepoint of its own (a burst
    /// that undoes its writes together, `Turn::together`); a panic is handed back.
    fn unguarded<T>(
        &self,
        conn: &mut SqliteConnection,
        work: impl FnOnce(&mut SqliteConnection) -> RepoResult<T>,
    ) -> std::thread::Result<RepoResult<T>> {
        let outcome = catch_unwind(AssertUnwindSafe(|| work(conn)));
        if let Ok(Err(error)) = &outcome {
            self.notice(error);
        }
        outcome
    }

    /// Takes the connection, joining the open transaction or beginning one; with whether it
    /// began it.
    fn join(&self, deadline: Instant) -> Result<(SqliteConnection, Arc<Batch>, bool), DomainError> {
        self.stopped()?;
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
        if let Err(refused) = self.stopped() {
            // It stopped while this writer waited.
            state.conn = Some(conn);
            drop(state);
            self.turn.notify_one();
            return Err(refused);
        }
        state.members += 1;
        if let Some(batch) = &state.batch {
            return Ok((conn, Arc::clone(batch), false));
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
        if let Err(error) = self.begin_by(&mut conn, deadline) {
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
        Ok((conn, batch, true))
    }

    /// `BEGIN IMMEDIATE`, waiting for another process's write lock until `deadline` at the most.
    /// The connection's `busy_timeout` is lowered for it only when the deadline is nearer than
    /// that wait by more than [`BUSY_SLACK`]: on a free database the statement is never needed.
    fn begin_by(&self, conn: &mut SqliteConnection, deadline: Instant) -> Result<(), DomainError> {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let busy = self.config.busy_timeout;
        if remaining + BUSY_SLACK >= busy {
            return begin_immediate(conn);
        }
        let set_busy = |conn: &mut SqliteConnection, wait: Duration| {
            step(conn.batch_execute(&format!("PRAGMA busy_timeout = {}", wait.as_millis())))
        };
        set_busy(conn, remaining)?;
        let begun = begin_immediate(conn);
        let restored = set_busy(conn, busy);
        begun.and(restored)
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
                    let _ = unwind_to(&mut conn, 0);
                    Err(self.commit_failed(error))
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

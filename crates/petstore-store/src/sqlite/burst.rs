//! SQLite's bursts: what the jobs a thread of the executor (`executor.rs`) takes at once
//! share, and how a job's store calls reach it.
//!
//! Reads share one pooled connection and one read transaction ([`ReadBurst`]); writes share
//! one turn of the writer, committed once after the last ([`WriteBurst`]). A job reaches its
//! burst only through the [`JobStore`] it is handed: nothing ambient decides where a store
//! call goes.
//!
//! A burst's writes run together, with no savepoint each: SQLite copies every page a
//! savepoint's statements change before the first change, and that copy was a tenth of what an
//! order cost (docs/performance.md). A write refused before it changed a row (most refusals:
//! the rules judge before anything is written) leaves nothing to undo, which the connection's
//! count of changed rows tells. One that fails after it changed a row, or panics, cannot be
//! undone alone: the burst *gives up*, undoes every write it made, and runs each job again
//! in a savepoint of its own, as PostgreSQL's bursts run each again alone (`postgres/burst.rs`).
//!
//! A few threads serving the work one after another beat one thread per call here: in WAL
//! mode a read never waits for a writer, a hot database's pages are in memory, and every
//! write goes through the one writer connection anyway.

use std::cell::{Cell, RefCell};
use std::panic::resume_unwind;
use std::sync::Arc;

use petstore_core::{DomainError, RepoResult, Snapshot, Store, Transaction};

use super::SqliteStore;
use super::snapshot::{self, Lent};
use super::tx::SqliteTx;
use super::writer::Turn;
use crate::error::StoreError;
use crate::job::{self, Bursts, JobStore, Lane, ReadJob, ThreadSpec, WriteJob, gave_up};
use crate::upkeep::forget_expired_records;

/// Reads one thread takes from the queue at once, at most: more would make the last of them
/// wait longer for the others, for little more saved.
const READ_BURST: usize = 16;

impl SqliteStore {
    /// One reader thread per core this process may use, at most 4 (a read is CPU work here,
    /// and more threads than cores only switch between each other), and one writer (SQLite
    /// has one writer connection; a second thread would only wait for it), taking as many
    /// writes as may share one commit. No deadline: the store bounds every wait itself.
    pub(crate) fn bursts(&self) -> Bursts {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        let (reading, writing) = (self.clone(), self.clone());
        let writer = Arc::clone(&self.writer);
        Bursts {
            readers: ThreadSpec {
                count: cores.min(4),
                burst: READ_BURST,
                run: Arc::new(move |jobs| run_reads(&reading, jobs)),
            },
            writers: ThreadSpec {
                count: 1,
                burst: super::writer::MAX_BATCH,
                run: Arc::new(move |jobs| run_writes(&writing, jobs)),
            },
            deadline: None,
            chore: Some(forget_expired_records(self.clone(), move || {
                writer.is_idle()
            })),
        }
    }
}

/// Runs the reads of a burst in one read transaction.
fn run_reads(store: &SqliteStore, jobs: Vec<ReadJob>) {
    let burst = ReadBurst::new(store);
    for job in jobs {
        job.run(JobStore::over(&burst));
    }
}

/// Runs the writes of a burst in one turn of the writer, and answers them after it ends.
///
/// The turn must begin by the time its oldest write has waited the connection time-out: a
/// write queued behind a burst that waited for another process's lock waits no longer than
/// that in all. A write that has waited so long already answers so without running. If the
/// writer cannot be taken in time (busy, another process's lock, `BEGIN` failed, the file
/// gone), every write answers why at once, rather than each waiting as long again.
fn run_writes(store: &SqliteStore, jobs: Vec<WriteJob>) {
    let wait = store.write_wait();
    let mut jobs = job::in_time(jobs, wait);
    let Some(oldest) = jobs.iter().map(WriteJob::queued).min() else {
        return;
    };
    match store.turn_by(oldest + wait) {
        Ok(turn) => {
            let burst = WriteBurst::new(store, turn);
            for job in &mut jobs {
                job.run(JobStore::over(&burst));
            }
            if burst.mode.get() == Mode::GaveUp {
                if let Err(refused) = burst.each_alone() {
                    let _ = burst.finish();
                    return job::refuse(jobs, &refused);
                }
                for job in &mut jobs {
                    job.run(JobStore::over(&burst));
                }
            }
            let outcome = burst.finish();
            for job in jobs {
                job.settle(outcome.as_ref().err());
            }
        }
        Err(refused) => job::refuse(jobs, &refused),
    }
}

/// One read transaction on one pooled connection, shared by the reads of a burst.
///
/// They all see the snapshot the first of them takes. That is right only for reads that were
/// all asked for before the burst began (the executor's queue): each then sees every write
/// committed before it was asked for, as it would alone. A read that fails ends the shared
/// transaction, and the next one begins another.
pub(crate) struct ReadBurst<'s> {
    store: &'s SqliteStore,
    /// The connection once the first read has checked one out, with whether its transaction
    /// is open; `None` before that, and while a read uses it.
    conn: RefCell<Option<(Lent, bool)>>,
    /// A read is using the connection: a read made from inside it takes its own.
    busy: Cell<bool>,
}

impl<'s> ReadBurst<'s> {
    pub(crate) fn new(store: &'s SqliteStore) -> Self {
        Self {
            store,
            conn: RefCell::new(None),
            busy: Cell::new(false),
        }
    }

    pub(crate) fn read<T>(
        &self,
        work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>,
    ) -> RepoResult<T> {
        if self.busy.replace(true) {
            return self.store.read(work);
        }
        let _free = Free(&self.busy);
        let (mut conn, open) = match self.conn.take() {
            Some(lent) => lent,
            None => (self.store.readers.get().map_err(StoreError::from)?, false),
        };
        if !open && let Err(error) = snapshot::begin(&mut conn) {
            self.conn.replace(Some((conn, false)));
            return Err(StoreError::from(error).into());
        }
        let result = work(&mut SqliteTx::new(&mut conn, &self.store.ledger));
        // After a failure, whatever state the transaction is in, the next read starts anew.
        let open = result.is_ok() || {
            let _ = snapshot::end(&mut conn);
            false
        };
        self.conn.replace(Some((conn, open)));
        result
    }
}

/// Marks the burst's connection free again, also when a read panics (its connection then
/// goes back to the pool, and the next `begin` on it clears what it left open).
struct Free<'b>(&'b Cell<bool>);

impl Drop for Free<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

/// Ends the burst's transaction: its reads have all answered by then.
impl Drop for ReadBurst<'_> {
    fn drop(&mut self) {
        if let Some((mut conn, true)) = self.conn.take() {
            // A failed end is cleared by the next `begin` on the connection.
            let _ = snapshot::end(&mut conn);
        }
    }
}

/// One turn of the writer, shared by the writes of a burst: they run together (see the
/// module's header) and return at once, before the commit that [`finish`](Self::finish)
/// answers. Reads made in the burst run on the turn's connection, so that they see the
/// writes made before them.
pub(crate) struct WriteBurst<'s> {
    store: &'s SqliteStore,
    turn: RefCell<Turn>,
    mode: Cell<Mode>,
    /// The connection's count of changed rows when the last write ended, if it was read.
    changes: Cell<Option<i64>>,
    /// Writes kept together.
    writes: Cell<u64>,
}

/// How a burst's writes run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Together, undone together if one fails after it changed a row.
    Together,
    /// Undone together: every store call fails until the jobs run again.
    GaveUp,
    /// Each in a savepoint of its own (the jobs' second run).
    Alone,
}

impl<'s> WriteBurst<'s> {
    pub(crate) fn new(store: &'s SqliteStore, mut turn: Turn) -> Self {
        // Without a guard to undo them to, the writes run each in a savepoint.
        let mode = if turn.guard().is_ok() {
            Mode::Together
        } else {
            Mode::Alone
        };
        Self {
            store,
            turn: RefCell::new(turn),
            mode: Cell::new(mode),
            changes: Cell::new(None),
            writes: Cell::new(0),
        }
    }

    pub(crate) fn write<T>(
        &self,
        work: impl FnOnce(&mut dyn Transaction) -> RepoResult<T>,
    ) -> RepoResult<T> {
        // The connection is in use by the write this one was made from: waiting for it would
        // wait forever.
        let Ok(mut turn) = self.turn.try_borrow_mut() else {
            return Err(DomainError::Storage(
                "a write cannot be made from inside another write".into(),
            ));
        };
        let ledger = &self.store.ledger;
        match self.mode.get() {
            Mode::Alone => turn.write(|conn| SqliteTx::write(conn, ledger, work)),
            Mode::GaveUp => Err(gave_up()),
            Mode::Together => {
                let before = match self.changes.take() {
                    Some(changes) => changes,
                    None => turn
                        .total_changes()
                        .inspect_err(|_| self.give_up(&mut turn))?,
                };
                match turn.together(|conn| SqliteTx::write(conn, ledger, work)) {
                    Ok(Ok(value)) => {
                        self.writes.set(self.writes.get() + 1);
                        Ok(value)
                    }
                    // A refusal by the rules that changed no row leaves nothing to undo.
                    Ok(Err(refused))
                        if !refused.is_infrastructure()
                            && turn.total_changes().ok() == Some(before) =>
                    {
                        self.changes.set(Some(before));
                        Err(refused)
                    }
                    Ok(Err(failed)) => {
                        self.give_up(&mut turn);
                        Err(failed)
                    }
                    Err(panic) => {
                        self.give_up(&mut turn);
                        resume_unwind(panic)
                    }
                }
            }
        }
    }

    /// Undoes the writes made together; the burst's store calls fail until its jobs run again.
    fn give_up(&self, turn: &mut Turn) {
        self.mode.set(Mode::GaveUp);
        self.writes.set(0);
        // A failed undo breaks the batch, which `each_alone` reports.
        let _ = turn.undo();
    }

    /// Makes the burst's writes run each in a savepoint of its own, for its jobs' second run;
    /// refused if the first run's writes could not be undone.
    fn each_alone(&self) -> Result<(), DomainError> {
        if self.turn.borrow().is_broken() {
            return Err(DomainError::Storage(
                "a burst's writes could not be undone; the batch was rolled back".into(),
            ));
        }
        self.mode.set(Mode::Alone);
        Ok(())
    }

    pub(crate) fn read<T>(
        &self,
        work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>,
    ) -> RepoResult<T> {
        let Ok(mut turn) = self.turn.try_borrow_mut() else {
            // Made from inside a read or write of this burst: a connection of its own.
            return self.store.read(work);
        };
        if self.mode.get() == Mode::GaveUp {
            return Err(gave_up());
        }
        match turn.connection() {
            Some(conn) => work(&mut SqliteTx::new(conn, &self.store.ledger)),
            None => self.store.read(work),
        }
    }

    /// Ends the turn, keeping the writes made together; the batch's outcome is every write's
    /// of the burst.
    pub(crate) fn finish(self) -> Result<(), DomainError> {
        let mut turn = self.turn.into_inner();
        let kept = match self.mode.get() {
            Mode::Together => turn.keep(self.writes.get()),
            Mode::GaveUp | Mode::Alone => Ok(()),
        };
        let outcome = turn.finish();
        kept.and(outcome)
    }
}

impl Lane for ReadBurst<'_> {
    fn run_read(
        &self,
        work: &mut dyn FnMut(&mut dyn Snapshot) -> RepoResult<()>,
    ) -> RepoResult<()> {
        ReadBurst::read(self, work)
    }

    /// The burst's reads share its transaction already.
    fn run_read_one(
        &self,
        work: &mut dyn FnMut(&mut dyn Snapshot) -> RepoResult<()>,
    ) -> RepoResult<()> {
        ReadBurst::read(self, work)
    }

    /// A write in a burst of reads takes a turn of its own, as from any thread.
    fn run_write(
        &self,
        work: &mut dyn FnMut(&mut dyn Transaction) -> RepoResult<()>,
    ) -> RepoResult<()> {
        self.store.write(work)
    }
}

impl Lane for WriteBurst<'_> {
    fn run_read(
        &self,
        work: &mut dyn FnMut(&mut dyn Snapshot) -> RepoResult<()>,
    ) -> RepoResult<()> {
        WriteBurst::read(self, work)
    }

    fn run_read_one(
        &self,
        work: &mut dyn FnMut(&mut dyn Snapshot) -> RepoResult<()>,
    ) -> RepoResult<()> {
        WriteBurst::read(self, work)
    }

    fn run_write(
        &self,
        work: &mut dyn FnMut(&mut dyn Transaction) -> RepoResult<()>,
    ) -> RepoResult<()> {
        WriteBurst::write(self, work)
    }

    #[cfg(test)]
    fn write_sql(&self, sql: &str) -> RepoResult<()> {
        use diesel::connection::SimpleConnection;
        self.turn.borrow_mut().write(|conn| {
            conn.batch_execute(sql)
                .map_err(|e| StoreError::from(e).into())
        })
    }
}

#[cfg(test)]
mod tests;

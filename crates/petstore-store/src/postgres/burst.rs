//! PostgreSQL's bursts: how the executor's threads (`executor.rs`) run the jobs they take at
//! once (`docs/storage.md`, "Grouping on PostgreSQL").
//!
//! Reads are `reads.rs`'s. **Writes** share one transaction and one `COMMIT`, most of what an
//! order costs the server; it begins by locking the pets its jobs name, in one statement.
//! No write takes a savepoint (a round trip and a subtransaction each), so once a write has
//! kept its changes, a later one that fails cannot be undone alone. The burst then *gives
//! up*: it rolls back, and each job runs again in a transaction of its own (`PgStore`'s
//! `write`, which waits for its locks as long as it must), answered after its commit. It
//! gives up when a write fails or is refused after a kept one, meets another transaction's
//! lock, or its connection fails, and when a job reads after a kept write (the read must see
//! it). A job naming a pet the burst's lock statement could not take runs alone after it
//! instead of meeting that lock. A write refused while alone in the transaction is undone
//! with it. Lock waits are
//! bounded (2 ms): bursts that took two rows in opposite orders would otherwise wait for the
//! server's `deadlock_timeout` (1 s), and one waiting on a popular row would hold its earlier
//! writes' rows all that time (orders over 20 pets: 32 a second unbounded, 2,587 at 2 ms).

use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use diesel::connection::SimpleConnection;
use diesel::r2d2::PooledConnection;
use petstore_core::{DomainError, RepoResult, Snapshot, Store, Transaction};

use super::PgStore;
use super::connection::PrimaryOnly;
use super::fetch::lock_and_look_up;
use super::held_back::{HeldBack, orders_counted_by_writer};
use super::tx::PgTx;
use crate::error::{StoreError, is_read_only};
use crate::job::{self, Bursts, Chore, GaveUp, JobStore, Lane, ThreadSpec, WriteJob, gave_up};
use crate::known_rows::KnownRows;
use crate::upkeep::forget_expired_records;

/// Begins a burst's transaction with its lock waits bounded, saying that its writes count
/// their orders into their pets themselves ([`HeldBack`]), as [`PgStore`]'s lone writes do.
const BEGIN: &str = concat!(
    "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL lock_timeout = '2ms'; ",
    orders_counted_by_writer!()
);

/// Writes one writer takes at once, in one transaction; one writer for every `WRITE_BURST` of
/// the pool's connections. With the pets locked in one statement and the writes held back
/// to two (`held_back.rs`), eight orders to a burst placed 1.14 times as many a second as four
/// over 1,000 pets, and 1.12 times over 20 popular pets (`bench/orders-postgres`).
const WRITE_BURST: usize = 8;

impl PgStore {
    /// Readers (`reads.rs`), and writers for the pool's connections; answered by the
    /// database deadline, since a server gone silent would hold a call for minutes.
    pub(crate) fn bursts(&self) -> Bursts {
        let writing = self.clone();
        Bursts {
            readers: super::reads::readers(self),
            writers: ThreadSpec {
                count: (self.connections() / WRITE_BURST).max(1),
                burst: WRITE_BURST,
                run: Arc::new(move |jobs| run_writes(&writing, jobs)),
            },
            deadline: Some(self.deadline()),
            chore: Some(Chore::together(vec![
                super::feed::queue_vacuum(self),
                forget_expired_records(self.clone(), || true),
            ])),
        }
    }
}

/// Runs the writes a writer took at once in one transaction, answering each after its
/// `COMMIT`; a lone job, a job naming a pet the burst could not lock, or each job of a burst
/// that gave up, in a transaction of its own. A job that waited the connection time-out, or
/// finds no connection, answers so unrun.
pub(super) fn run_writes(store: &PgStore, jobs: Vec<WriteJob>) {
    let mut jobs = job::in_time(jobs, store.write_wait());
    if jobs.len() > 1 {
        let burst = match PgWriteBurst::start(store, &jobs) {
            Ok(burst) => burst,
            Err(refused) => return job::refuse(jobs, &refused),
        };
        let blocked;
        (jobs, blocked) = burst.set_aside_blocked(jobs);
        if let Ok(committed) = burst.run(&mut jobs) {
            for job in jobs {
                job.settle(committed.as_ref().err());
            }
            jobs = blocked;
        } else {
            store.counts.reruns.fetch_add(1, Ordering::Relaxed);
            jobs.extend(blocked);
        }
        // A job that has now waited the connection time-out in all answers so.
        jobs = job::in_time(jobs, store.write_wait());
    }
    for mut job in jobs {
        job.run(JobStore::over(store));
        job.settle(None);
    }
}

/// Where a burst's transaction stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// No transaction is open: the next write begins one.
    Idle,
    /// The transaction is open, and no write has kept its changes in it.
    Begun,
    /// A write kept its changes; it commits at the end (`xid` once a write's events gave it).
    Written { xid: Option<i64> },
    /// Rolled back: nothing the burst did stays.
    GaveUp,
}

/// The writes of one burst, on one pooled connection.
struct PgWriteBurst<'s> {
    store: &'s PgStore,
    conn: RefCell<PooledConnection<PrimaryOnly>>,
    /// The pets its jobs name, locked as it begins; a row is forgotten once a write changes
    /// it, and all of them when the transaction rolls back (its locks go with it).
    known: RefCell<KnownRows>,
    /// The writes held back until the commit (`held_back.rs`), the order ids in hand, and
    /// the records of the keys the jobs name.
    held_back: RefCell<HeldBack>,
    state: Cell<State>,
    /// Writes that kept their changes, counted once the burst commits.
    writes: Cell<u64>,
}

impl<'s> PgWriteBurst<'s> {
    /// Takes the burst's connection. If its jobs name pets or idempotency keys, begins its
    /// transaction by locking the pets and looking up the keys in one statement
    /// ([`lock_and_look_up`]), so that each job reads its pet's row and its key's record from
    /// memory; otherwise, or if that fails, the transaction begins with the first write.
    fn start(store: &'s PgStore, jobs: &[WriteJob]) -> RepoResult<Self> {
        let conn = store.pool.get().map_err(StoreError::from)?;
        let burst = Self {
            store,
            conn: RefCell::new(conn),
            known: RefCell::new(KnownRows::served_once()),
            held_back: RefCell::default(),
            state: Cell::new(State::Idle),
            writes: Cell::new(0),
        };
        let pets = job::named_pets(jobs.iter().flat_map(|job| &job.rows));
        let keys = job::named_keys(jobs);
        let mut conn = burst.conn.borrow_mut();
        if !(pets.is_empty() && keys.is_empty()) && conn.batch_execute(BEGIN).is_ok() {
            burst.state.set(State::Begun);
            match lock_and_look_up(&mut conn.conn, &pets, keys) {
                Ok((known, keys, order_ids)) => {
                    *burst.known.borrow_mut() = known;
                    let mut held_back = burst.held_back.borrow_mut();
                    held_back.add_order_ids(order_ids);
                    held_back.looked_up(keys);
                }
                Err(_) => burst.roll_back(&mut conn, true),
            }
        }
        drop(conn);
        Ok(burst)
    }

    /// Splits `jobs` into those whose named pets its lock statement locked, and those naming
    /// a pet it did not (another transaction holds it, or it does not exist). One of the
    /// latter would wait for the pet inside the burst and, past the bound, make it give up,
    /// all its jobs running again alone (a checkout names several pets, so often does): it
    /// runs alone after the burst instead, waiting as long as it must.
    fn set_aside_blocked(&self, jobs: Vec<WriteJob>) -> (Vec<WriteJob>, Vec<WriteJob>) {
        // Only a transaction begun with the lock statement knows what it locked.
        if self.state.get() != State::Begun {
            return (jobs, Vec::new());
        }
        let known = self.known.borrow();
        jobs.into_iter().partition(|job| {
            job.rows.iter().all(|row| match row {
                crate::Row::Pet(id) => known.has(*id),
            })
        })
    }

    /// Runs each job on the burst, then commits: the commit's outcome, or [`GaveUp`].
    fn run(self, jobs: &mut Vec<WriteJob>) -> Result<RepoResult<()>, GaveUp> {
        for job in jobs.iter_mut() {
            job.run(JobStore::over(&self));
            if self.state.get() == State::GaveUp {
                return Err(GaveUp);
            }
        }
        #[cfg(feature = "plant-answer-before-commit")]
        crate::plant::answer_before_commit(jobs);
        self.commit()
    }

    fn write<T>(&self, work: impl FnOnce(&mut dyn Transaction) -> RepoResult<T>) -> RepoResult<T> {
        // The connection is in use by the write this one was made from.
        let Ok(mut conn) = self.conn.try_borrow_mut() else {
            return Err(DomainError::Storage(
                "a write cannot be made from inside another write".into(),
            ));
        };
        let xid_before = match self.state.get() {
            State::GaveUp => return Err(gave_up()),
            State::Idle => {
                if let Err(error) = conn.batch_execute(BEGIN) {
                    self.roll_back(&mut conn, false);
                    return Err(StoreError::from(error).into());
                }
                self.state.set(State::Begun);
                None
            }
            State::Begun => None,
            State::Written { xid } => Some(xid),
        };
        let (outcome, xid) = {
            let mut known = self.known.borrow_mut();
            let mut held_back = self.held_back.borrow_mut();
            let mut tx = PgTx::writing(&mut conn.conn, &mut known, &mut held_back);
            (catch_unwind(AssertUnwindSafe(|| work(&mut tx))), tx.xid)
        };
        let kept_before = xid_before.is_some();
        match outcome {
            Ok(Ok(value)) => {
                let xid = xid_before.flatten().or(xid);
                self.state.set(State::Written { xid });
                self.writes.set(self.writes.get() + 1);
                Ok(value)
            }
            Ok(Err(error)) => {
                // A server that refused a write as read-only is of no use to writes until the
                // connection reaches another: dropped when it goes back to the pool.
                conn.refused_writes |= is_read_only(&error);
                // Only a refusal by the rules is the job's own answer, and only while no
                // other write has kept its changes. Anything else (a lock waited for past
                // the burst's bound, a failed send of held-back writes, a lost connection)
                // is judged by no message text: the jobs run again, each alone.
                let sent = !self.held_back.borrow().failed();
                let alone = sent && !kept_before && !error.is_infrastructure();
                self.roll_back(&mut conn, alone);
                Err(error)
            }
            Err(panic) => {
                self.roll_back(&mut conn, !kept_before);
                resume_unwind(panic);
            }
        }
    }

    /// A read made by a job, in a snapshot of its own on another connection. After a kept
    /// write only a commit would show it that write, so the burst gives up instead.
    fn read<T>(&self, read: impl FnOnce(&PgStore) -> RepoResult<T>) -> RepoResult<T> {
        if let Ok(mut conn) = self.conn.try_borrow_mut() {
            match self.state.get() {
                State::GaveUp => return Err(gave_up()),
                State::Written { .. } => {
                    self.roll_back(&mut conn, false);
                    return Err(gave_up());
                }
                State::Idle | State::Begun => {}
            }
        }
        read(self.store)
    }

    /// Rolls back the open transaction. A write `alone` in it is undone with it, and the
    /// next write begins another; otherwise the burst gives up. A connection that fails here
    /// is dropped by the pool (`has_broken`), its transaction with it.
    fn roll_back(&self, conn: &mut PooledConnection<PrimaryOnly>, alone: bool) {
        let rolled_back = conn.batch_execute("ROLLBACK").is_ok();
        self.known.borrow_mut().forget(None);
        self.held_back.borrow_mut().discard();
        self.state.set(if alone && rolled_back {
            State::Idle
        } else {
            State::GaveUp
        });
    }

    /// Sends the writes held back, then commits what the burst's writes kept, counting
    /// them: the commit's outcome, or [`GaveUp`] if the held-back writes failed.
    fn commit(&self) -> Result<RepoResult<()>, GaveUp> {
        let mut conn = self.conn.borrow_mut();
        let xid = match self.state.get() {
            State::Written { xid } => {
                let sent = self.held_back.borrow_mut().send(&mut conn.conn);
                if self.held_back.borrow().failed() {
                    self.roll_back(&mut conn, false);
                    return Err(GaveUp);
                }
                xid.or(sent)
            }
            // Rows locked, nothing written: their locks go.
            State::Begun => {
                let _ = conn.batch_execute("ROLLBACK");
                self.state.set(State::Idle);
                return Ok(Ok(()));
            }
            State::Idle | State::GaveUp => return Ok(Ok(())),
        };
        self.state.set(State::Idle);
        let xid = match PgStore::transaction_id(&mut conn.conn, xid) {
            Ok(xid) => xid,
            Err(error) => {
                let _ = conn.batch_execute("ROLLBACK");
                return Ok(Err(error));
            }
        };
        let timeline = conn.timeline;
        let committed = self.store.commit(&mut conn.conn, xid, timeline);
        if committed.is_ok() {
            let counts = &self.store.counts;
            counts.commits.fetch_add(1, Ordering::Relaxed);
            counts
                .writes
                .fetch_add(self.writes.get(), Ordering::Relaxed);
        }
        Ok(committed)
    }
}

impl Lane for PgWriteBurst<'_> {
    fn run_read(
        &self,
        work: &mut dyn FnMut(&mut dyn Snapshot) -> RepoResult<()>,
    ) -> RepoResult<()> {
        PgWriteBurst::read(self, |store| Store::read(store, work))
    }

    fn run_read_one(
        &self,
        work: &mut dyn FnMut(&mut dyn Snapshot) -> RepoResult<()>,
    ) -> RepoResult<()> {
        PgWriteBurst::read(self, |store| Store::read_one(store, work))
    }

    fn run_write(
        &self,
        work: &mut dyn FnMut(&mut dyn Transaction) -> RepoResult<()>,
    ) -> RepoResult<()> {
        PgWriteBurst::write(self, work)
    }
}

/// A burst that ends without committing (its thread panicked) leaves nothing open.
impl Drop for PgWriteBurst<'_> {
    fn drop(&mut self) {
        if matches!(self.state.get(), State::Begun | State::Written { .. }) {
            let _ = self.conn.get_mut().batch_execute("ROLLBACK");
        }
    }
}

#[cfg(test)]
mod tests;

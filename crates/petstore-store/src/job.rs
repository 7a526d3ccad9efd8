//! Work handed to the store's threads ([`crate::Executor`]), the store each piece of it is
//! given ([`JobStore`]), and what a backend tells the executor of its bursts ([`Bursts`]).
//!
//! This module names no backend: each backend's burst runner (`sqlite/burst.rs`,
//! `postgres/burst.rs`) takes the jobs defined here and hands each a `JobStore` over the
//! burst it runs in, and the executor only queues jobs and starts threads.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant};

use petstore_core::{
    DomainError, Failure, OwnerId, PetId, RepoResult, Snapshot, Store, Transaction,
};

use crate::freshness::Freshness;

/// A row a piece of work says it will read, named before it runs (a pet id from a request's
/// path): a burst can fetch the rows its jobs name in one statement instead of one each.
/// Naming a row is a hint; the work reads what it needs whether or not it was fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Row {
    /// A pet's row: the pet, its stock and its open orders.
    Pet(PetId),
}

/// The idempotency key a create will look up, named before it runs (the request's
/// `Idempotency-Key`, and the owner it is scoped to): a burst of writes looks up the records
/// of every key its jobs name in one statement. A hint too, as [`Row`] is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyName {
    /// The key's owner (the caller's key id).
    pub owner: OwnerId,
    /// The client's key.
    pub key: String,
}

/// What a write names before it runs: the row it will change and the idempotency key it
/// will look up, each if its caller knows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteNames {
    /// The row the work will change.
    pub row: Option<Row>,
    /// The idempotency key the work will look up.
    pub key: Option<KeyName>,
}

impl From<Option<Row>> for WriteNames {
    fn from(row: Option<Row>) -> Self {
        Self { row, key: None }
    }
}

/// What a read names before it runs: the row it will read, if its caller knows it, and how
/// fresh what it reads must be.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadNames {
    /// The row the work will read.
    pub row: Option<Row>,
    /// How fresh its answer must be, and so which servers may serve it.
    pub freshness: Freshness,
}

impl From<Option<Row>> for ReadNames {
    fn from(row: Option<Row>) -> Self {
        Self {
            row,
            freshness: Freshness::default(),
        }
    }
}

/// A queued read: runs its work on the burst's store and answers at once.
pub(crate) struct ReadJob {
    /// The row the work said it will read, if it named one.
    pub(crate) row: Option<Row>,
    /// How fresh what it reads must be.
    pub(crate) freshness: Freshness,
    /// When it was queued: a read must see every write acknowledged before then.
    pub(crate) queued: Instant,
    /// Runs the work on a store and answers its caller, unless told it may run again
    /// elsewhere (`false`) and the infrastructure failed; whether it answered.
    work: Box<dyn for<'b> FnMut(JobStore<'b>, Retry) -> Answered + Send>,
}

/// Whether a read that met an infrastructure failure may run again on another server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Answer whatever the outcome.
    Never,
    /// A failure of the infrastructure (a standby gone under the read) is not answered: the
    /// read runs again, on the primary.
    Elsewhere,
}

/// Whether a run of a read answered its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answered {
    Yes,
    No,
}

impl ReadJob {
    /// A read of `work`, whose result goes to `answer` (only the run that answers counts).
    pub(crate) fn new<T: 'static>(
        names: impl Into<ReadNames>,
        mut work: impl for<'b> FnMut(JobStore<'b>) -> RepoResult<T> + Send + 'static,
        answer: impl FnOnce(RepoResult<T>) + Send + 'static,
    ) -> Self {
        let names = names.into();
        let mut answer = Some(answer);
        Self {
            row: names.row,
            freshness: names.freshness,
            queued: Instant::now(),
            work: Box::new(move |store, retry| {
                let Ok(result) = catch_unwind(AssertUnwindSafe(|| work(store))) else {
                    // A read that panicked is not answered: its answer is dropped.
                    answer = None;
                    return Answered::Yes;
                };
                if retry == Retry::Elsewhere
                    && result.as_ref().is_err_and(DomainError::is_infrastructure)
                {
                    return Answered::No;
                }
                if let Some(answer) = answer.take() {
                    answer(result);
                }
                Answered::Yes
            }),
        }
    }

    /// A read whose work answers by itself, run once (tests).
    #[cfg(test)]
    pub(crate) fn once(
        names: impl Into<ReadNames>,
        work: impl for<'b> FnOnce(JobStore<'b>) + Send + 'static,
    ) -> Self {
        let mut work = Some(work);
        Self::new(
            names,
            move |store| {
                if let Some(work) = work.take() {
                    work(store);
                }
                Ok(())
            },
            |_| {},
        )
    }

    /// Runs the work on `store` and answers its caller.
    pub(crate) fn run(mut self, store: JobStore<'_>) {
        (self.work)(store, Retry::Never);
    }

    /// Runs the work on `store`, a standby's; if the infrastructure failed under it, runs it
    /// again on `primary`, which answers.
    pub(crate) fn run_or_on(mut self, store: JobStore<'_>, primary: JobStore<'_>) {
        if (self.work)(store, Retry::Elsewhere) == Answered::No {
            (self.work)(primary, Retry::Never);
        }
    }
}

/// The pets `rows` name, each once, in id order.
pub(crate) fn named_pets(rows: impl Iterator<Item = Option<Row>>) -> Vec<i64> {
    let mut pets: Vec<i64> = rows
        .filter_map(|row| match row? {
            Row::Pet(id) => Some(id.get()),
        })
        .collect();
    pets.sort_unstable();
    pets.dedup();
    pets
}

/// The idempotency keys `jobs` name, each once.
pub(crate) fn named_keys(jobs: &[WriteJob]) -> Vec<(i64, String)> {
    let mut keys: Vec<(i64, String)> = jobs
        .iter()
        .filter_map(|job| job.key.as_ref())
        .map(|name| (name.owner.get(), name.key.clone()))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// A queued write, and when it was queued: a write waits for a writer at most the store's
/// connection time-out from then, whatever was queued before it.
pub(crate) struct WriteJob {
    queued: Instant,
    /// The row the work said it will write, if it named one.
    pub(crate) row: Option<Row>,
    /// The idempotency key the work said it will look up, if it named one.
    pub(crate) key: Option<KeyName>,
    write: Box<dyn QueuedWrite>,
}

/// A write's work and its caller's answer, type-erased for the queue. The work may run more
/// than once: a PostgreSQL burst that gives up its shared transaction runs each job again in
/// a transaction of its own (`postgres/burst.rs`). Only the last run's result is answered,
/// and only after the commit its writes went into.
trait QueuedWrite: Send {
    /// Runs the work on `store`, keeping its result in place of any earlier run's.
    fn run(&mut self, store: JobStore<'_>);
    /// Answers the last run's result, or `failed` (the commit's failure) in place of a value.
    /// A work that panicked in its last run is not answered: its answer is dropped.
    fn settle(self: Box<Self>, failed: Option<&DomainError>);
    /// Answers `refused` without running.
    fn refuse(self: Box<Self>, refused: &DomainError);
}

struct Write<W, A, T> {
    work: W,
    answer: A,
    /// The last run's result; `None` before a run and after one that panicked.
    result: Option<RepoResult<T>>,
}

impl<W, A, T> QueuedWrite for Write<W, A, T>
where
    W: for<'b> FnMut(JobStore<'b>) -> RepoResult<T> + Send,
    A: FnOnce(RepoResult<T>) + Send,
    T: Send,
{
    fn run(&mut self, store: JobStore<'_>) {
        self.result = catch_unwind(AssertUnwindSafe(|| (self.work)(store))).ok();
    }

    fn settle(self: Box<Self>, failed: Option<&DomainError>) {
        let Some(result) = self.result else {
            return;
        };
        (self.answer)(match (result, failed) {
            (Ok(_), Some(failure)) => Err(failure.clone()),
            (result, _) => result,
        });
    }

    fn refuse(self: Box<Self>, refused: &DomainError) {
        (self.answer)(Err(refused.clone()));
    }
}

impl WriteJob {
    pub(crate) fn new<T: Send + 'static>(
        row: Option<Row>,
        work: impl for<'b> FnMut(JobStore<'b>) -> RepoResult<T> + Send + 'static,
        answer: impl FnOnce(RepoResult<T>) + Send + 'static,
    ) -> Self {
        Self {
            queued: Instant::now(),
            row,
            key: None,
            write: Box::new(Write {
                work,
                answer,
                result: None,
            }),
        }
    }

    /// The job, naming the idempotency key its work will look up.
    pub(crate) fn naming_key(self, key: Option<KeyName>) -> Self {
        Self { key, ..self }
    }

    /// When the job was queued.
    pub(crate) fn queued(&self) -> Instant {
        self.queued
    }

    /// Runs the job's work on `store`; its result replaces any earlier run's.
    pub(crate) fn run(&mut self, store: JobStore<'_>) {
        self.write.run(store);
    }

    /// Answers the last run's result, or `failed` (the failure of the commit its writes went
    /// into) in place of a value.
    pub(crate) fn settle(self, failed: Option<&DomainError>) {
        self.write.settle(failed);
    }

    /// Answers `refused` without running.
    pub(crate) fn refuse(self, refused: &DomainError) {
        self.write.refuse(refused);
    }
}

/// Answers each of `jobs` with `refused`, without running it.
pub(crate) fn refuse(jobs: Vec<WriteJob>, refused: &DomainError) {
    for job in jobs {
        job.refuse(refused);
    }
}

/// The jobs that have waited less than `wait`; the others answer so at once, without running.
pub(crate) fn in_time(jobs: Vec<WriteJob>, wait: Duration) -> Vec<WriteJob> {
    let now = Instant::now();
    let (late, jobs): (Vec<WriteJob>, Vec<WriteJob>) =
        jobs.into_iter().partition(|job| job.queued + wait <= now);
    if !late.is_empty() {
        let waited = DomainError::Unavailable(Failure::new(format!(
            "the write waited {wait:?} for the database's writer"
        )));
        refuse(late, &waited);
    }
    jobs
}

/// Runs the jobs one thread took at once as one burst.
pub(crate) type Runner<J> = Arc<dyn Fn(Vec<J>) + Send + Sync>;

/// What a backend's threads are: how many, how many jobs each takes at once, what runs the
/// jobs it took, by when its calls must be answered, and the chore it wants done now and then.
pub(crate) struct Bursts {
    pub(crate) readers: ThreadSpec<ReadJob>,
    pub(crate) writers: ThreadSpec<WriteJob>,
    /// How long a caller waits for an answer in all, where the backend's waits are not
    /// bounded by this process (the network to a server): `None` on SQLite.
    pub(crate) deadline: Option<Duration>,
    /// Upkeep on a thread of its own, off every caller's path.
    pub(crate) chore: Option<Chore>,
}

/// Upkeep a backend wants done every so often (PostgreSQL vacuums its feed's queue,
/// `postgres/feed.rs`; both forget expired idempotency records, `upkeep.rs`). It handles its
/// own failures: the next run tries again.
pub(crate) struct Chore {
    pub(crate) every: Duration,
    pub(crate) run: Box<dyn FnMut() + Send>,
}

impl Chore {
    /// One chore doing each of `chores` at its own pace, on one thread: it wakes as often as
    /// the most frequent of them, and runs each whose time has come.
    pub(crate) fn together(chores: Vec<Chore>) -> Chore {
        let every = chores
            .iter()
            .map(|chore| chore.every)
            .min()
            .unwrap_or(Duration::from_secs(1));
        let mut due: Vec<(Instant, Chore)> = chores
            .into_iter()
            .map(|chore| (Instant::now() + chore.every, chore))
            .collect();
        Chore {
            every,
            run: Box::new(move || {
                let now = Instant::now();
                for (at, chore) in &mut due {
                    // A waking a little early (the thread's own period) still counts as due.
                    if *at <= now + every / 2 {
                        (chore.run)();
                        *at = now + chore.every;
                    }
                }
            }),
        }
    }
}

/// One kind of thread: how many, the most jobs each takes at once, and what runs them.
pub(crate) struct ThreadSpec<J> {
    pub(crate) count: usize,
    pub(crate) burst: usize,
    pub(crate) run: Runner<J>,
}

/// Where a [`JobStore`]'s calls go: a burst of one backend, or a store itself. The methods
/// take type-erased work so that `JobStore` names no backend; it gives the work back its
/// types.
pub(crate) trait Lane {
    fn run_read(&self, work: &mut dyn FnMut(&mut dyn Snapshot) -> RepoResult<()>)
    -> RepoResult<()>;
    fn run_read_one(
        &self,
        work: &mut dyn FnMut(&mut dyn Snapshot) -> RepoResult<()>,
    ) -> RepoResult<()>;
    fn run_write(
        &self,
        work: &mut dyn FnMut(&mut dyn Transaction) -> RepoResult<()>,
    ) -> RepoResult<()>;
    /// Runs raw SQL in the burst's write transaction (tests that break a commit on purpose).
    #[cfg(test)]
    fn write_sql(&self, _sql: &str) -> RepoResult<()> {
        Err(DomainError::Storage("not a burst of writes".into()))
    }
}

/// The store one piece of work runs on: a [`Store`] whose calls go where the work was sent.
/// The executor hands one to each job over the burst it runs in (reads sharing one read
/// transaction, writes sharing one transaction and its commit), or over the backend's store
/// itself (each call in a transaction of its own).
#[derive(Clone, Copy)]
pub struct JobStore<'a>(&'a dyn Lane);

impl<'a> JobStore<'a> {
    pub(crate) fn over(lane: &'a dyn Lane) -> Self {
        Self(lane)
    }

    #[cfg(test)]
    pub(crate) fn write_sql(self, sql: &str) -> RepoResult<()> {
        self.0.write_sql(sql)
    }
}

impl std::fmt::Debug for JobStore<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobStore").finish_non_exhaustive()
    }
}

/// What a lane answers when it returns without having run the work it was given: a bug in
/// the lane, answered as a storage failure rather than a panic.
fn not_run() -> DomainError {
    DomainError::Storage("a store call returned without running its work".into())
}

/// A lane's type-erased read: it runs the work it is given once.
type ErasedRead<'w> = &'w mut dyn FnMut(&mut dyn Snapshot) -> RepoResult<()>;

/// Runs `work` once through `erased` (a lane's read), giving back what it returned.
fn read_once<T>(
    work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>,
    erased: impl FnOnce(ErasedRead<'_>) -> RepoResult<()>,
) -> RepoResult<T> {
    let (mut work, mut value) = (Some(work), None);
    erased(&mut |snapshot| {
        let work = work.take().ok_or_else(not_run)?;
        value = Some(work(snapshot)?);
        Ok(())
    })?;
    value.ok_or_else(not_run)
}

impl Store for JobStore<'_> {
    fn read<T>(&self, work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>) -> RepoResult<T> {
        read_once(work, |erased| self.0.run_read(erased))
    }

    fn write<T>(
        &self,
        mut work: impl FnMut(&mut dyn Transaction) -> RepoResult<T>,
    ) -> RepoResult<T> {
        let mut value = None;
        self.0.run_write(&mut |tx| {
            value = None;
            value = Some(work(tx)?);
            Ok(())
        })?;
        value.ok_or_else(not_run)
    }

    fn read_one<T>(&self, work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>) -> RepoResult<T> {
        read_once(work, |erased| self.0.run_read_one(erased))
    }
}

/// Makes a store a lane of its own, each call in a transaction of its own (a blanket impl
/// over every `Store` would stand in the way of the bursts' own).
macro_rules! store_lane {
    ($store:ty) => {
        impl $crate::job::Lane for $store {
            fn run_read(
                &self,
                work: &mut dyn FnMut(&mut dyn petstore_core::Snapshot) -> RepoResult<()>,
            ) -> RepoResult<()> {
                petstore_core::Store::read(self, work)
            }

            fn run_read_one(
                &self,
                work: &mut dyn FnMut(&mut dyn petstore_core::Snapshot) -> RepoResult<()>,
            ) -> RepoResult<()> {
                petstore_core::Store::read_one(self, work)
            }

            fn run_write(
                &self,
                work: &mut dyn FnMut(&mut dyn petstore_core::Transaction) -> RepoResult<()>,
            ) -> RepoResult<()> {
                petstore_core::Store::write(self, work)
            }
        }
    };
}
pub(crate) use store_lane;

#[cfg(test)]
mod tests;

//! A queued write, type-erased for the queue: its work may run more than once, and only the
//! last run is answered, after its commit.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use petstore_core::{DomainError, Failure, RepoResult};

use super::lane::JobStore;
use super::names::{KeyName, Row};

/// A queued write, and when it was queued: a write waits for a writer at most the store's
/// connection time-out from then, whatever was queued before it.
pub(crate) struct WriteJob {
    queued: Instant,
    /// The rows the work said it will write.
    pub(crate) rows: Vec<Row>,
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
        rows: impl IntoIterator<Item = Row>,
        work: impl for<'b> FnMut(JobStore<'b>) -> RepoResult<T> + Send + 'static,
        answer: impl FnOnce(RepoResult<T>) + Send + 'static,
    ) -> Self {
        Self {
            queued: Instant::now(),
            rows: rows.into_iter().collect(),
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

/// A burst that undid its writes together: its jobs run again, each alone. No client sees
/// it; a job's store calls answer it (as a storage failure) until its run ends.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the burst gave up its transaction; its jobs run again, each alone")]
pub(crate) struct GaveUp;

/// [`GaveUp`], as a job's store calls answer it.
pub(crate) fn gave_up() -> DomainError {
    DomainError::Storage(Failure::caused_by(GaveUp))
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

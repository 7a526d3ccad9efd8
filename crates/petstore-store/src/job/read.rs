//! A queued read, type-erased for the queue.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

use petstore_core::{DomainError, RepoResult};

use super::lane::JobStore;
use super::names::{ReadNames, Row};
use crate::freshness::Freshness;

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
enum Retry {
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

    /// Runs the work on `store`, answering its caller unless the infrastructure failed under
    /// it: then the job is left to run again elsewhere (a standby's read, run again on the
    /// primary: `postgres/reads.rs`).
    pub(crate) fn run_unless_infrastructure_fails(&mut self, store: JobStore<'_>) -> Answered {
        (self.work)(store, Retry::Elsewhere)
    }
}

//! Bugs planted on purpose, for the soak's negative controls (`bench/chaos`, `--plant`): a
//! checker that passes a service with one of these has not checked what it claims. Each is
//! compiled only with its Cargo feature, which no release and no test build turns on.

use crate::job::WriteJob;

/// Answers a burst's jobs with what they returned before their `COMMIT` has run: a commit
/// that then fails (a connection cut during it) loses writes already acknowledged.
pub(crate) fn answer_before_commit(jobs: &mut Vec<WriteJob>) {
    for job in jobs.drain(..) {
        job.settle(None);
    }
}

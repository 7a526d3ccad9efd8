//! Bugs planted on purpose, for the soak's negative controls (`bench/chaos`, `--plant`): a
//! checker that passes a service with one of these has not checked what it claims. Each is
//! compiled only with its Cargo feature, which no release and no test build turns on.

#[cfg(feature = "plant-answer-before-commit")]
use crate::job::WriteJob;

/// Answers a burst's jobs with what they returned before their `COMMIT` has run: a commit
/// that then fails (a connection cut during it) loses writes already acknowledged.
#[cfg(feature = "plant-answer-before-commit")]
pub(crate) fn answer_before_commit(jobs: &mut Vec<WriteJob>) {
    for job in jobs.drain(..) {
        job.settle(None);
    }
}

/// Drops the trigger that refuses any change to an ended hold, on the database just migrated:
/// with end_hold's own guard left out too, nothing below the use cases ends a hold once.
#[cfg(feature = "plant-hold-guard-off")]
pub(crate) fn drop_hold_guard(
    conn: &mut impl diesel::connection::SimpleConnection,
    postgres: bool,
) -> Result<(), crate::error::StoreError> {
    conn.batch_execute(if postgres {
        "DROP TRIGGER IF EXISTS hold_ends_once ON holds"
    } else {
        "DROP TRIGGER IF EXISTS hold_ends_once"
    })?;
    Ok(())
}

//! Whether the database takes writes ([`Health`]): a write that failed for the disk's sake
//! marks the writer failing until a probe commits, and a commit the disk failed to sync stops
//! it. Kept apart from the group commit (`writer.rs`), which only reports to it and asks it.

use std::sync::Arc;

use diesel::RunQueryDsl;
use petstore_core::DomainError;

use super::{GroupWriter, lock};
use crate::error::{StoreError, is_commit_in_doubt, is_disk_failure};

/// Whether the database has taken writes lately.
#[derive(Debug, Clone)]
pub(super) enum Health {
    /// No write has committed since the store opened: a file opened read-only looks fine to
    /// every read, so readiness proves it with a write first.
    Unproven,
    /// The last probe committed, and no write has failed for the disk's sake since. (A
    /// client's commit proves less: on a connection SQLite opened read-only, a write that
    /// changed no row commits fine.)
    Writable,
    /// A write failed because of the disk or the file, not the request.
    Failing,
    /// A commit failed to reach the disk; no write is taken until the process restarts. The
    /// text is the commit's error.
    Stopped(String),
}

impl GroupWriter {
    /// Records a failure if the disk or the file caused it.
    pub(super) fn notice(&self, error: &DomainError) {
        let mut health = lock(&self.health);
        if is_disk_failure(error) && !matches!(*health, Health::Stopped(_)) {
            *health = Health::Failing;
        }
    }

    pub(super) fn is_failing(&self) -> bool {
        matches!(*lock(&self.health), Health::Failing)
    }

    /// The refusal of every write once a commit has failed on the disk.
    pub(super) fn stopped(&self) -> Result<(), DomainError> {
        match &*lock(&self.health) {
            Health::Stopped(cause) => Err(StoreError::WritesStopped(cause.clone()).into()),
            _ => Ok(()),
        }
    }

    /// What a failed commit means for its writes: a commit the disk failed to sync may have
    /// taken effect, so its writes are answered `OutcomeUnknown` and the writer stops.
    pub(super) fn commit_failed(&self, error: DomainError) -> DomainError {
        if !is_commit_in_doubt(&error) {
            self.notice(&error);
            return error;
        }
        *lock(&self.health) = Health::Stopped(error.to_string());
        match error {
            DomainError::Unavailable(failure) => DomainError::OutcomeUnknown(failure),
            other => other,
        }
    }

    /// `Ok` once a probe has committed and no write has failed for the disk's sake since.
    /// Until then, runs a write of its own (one row of `write_probe`), so that an operator's fix
    /// shows without waiting for a client to write.
    pub(crate) fn probe(self: &Arc<Self>) -> Result<(), DomainError> {
        if matches!(*lock(&self.health), Health::Writable) {
            return Ok(());
        }
        self.stopped()?;
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
}

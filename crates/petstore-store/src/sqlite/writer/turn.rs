//! A writer's time with the connection ([`Turn`]): one write, or every write of an executor's
//! burst, each in a savepoint of the open batch or all of them together.

use std::panic::resume_unwind;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use diesel::RunQueryDsl;
use diesel::sqlite::SqliteConnection;
use petstore_core::{DomainError, RepoResult};

use super::savepoints::{begin, commit, unwind_to};
use super::{Batch, GroupWriter};
use crate::error::StoreError;
use crate::sqlite::prepared::TotalChanges;

/// One writer's time with the connection, in the open batch ([`GroupWriter::turn`]). Its
/// writes return before the batch commits; [`finish`](Self::finish) leaves and answers the
/// batch's outcome, which is every one of them: until then, none may be acknowledged.
pub(crate) struct Turn {
    pub(super) writer: Arc<GroupWriter>,
    /// `None` once the turn has left.
    pub(super) conn: Option<SqliteConnection>,
    pub(super) batch: Arc<Batch>,
    /// The turn began the batch: its transaction holds nothing but the turn's writes.
    pub(super) began: bool,
}

impl Turn {
    /// Runs `work` in a savepoint of its own: kept if it succeeds, undone alone if it fails or
    /// panics (the panic goes on once the connection is back at the batch's level).
    pub(crate) fn write<T>(
        &mut self,
        work: impl FnOnce(&mut SqliteConnection) -> RepoResult<T>,
    ) -> RepoResult<T> {
        match self.savepoint(work) {
            Err(panic) => resume_unwind(panic),
            Ok(result) => result.and_then(|value| value),
        }
    }

    /// [`write`](Self::write), with a panic of `work` handed back instead of resumed.
    pub(super) fn savepoint<T>(
        &mut self,
        work: impl FnOnce(&mut SqliteConnection) -> RepoResult<T>,
    ) -> std::thread::Result<Result<RepoResult<T>, DomainError>> {
        let Self {
            writer,
            conn,
            batch,
            ..
        } = self;
        match conn {
            Some(conn) => writer.in_savepoint(conn, batch, work),
            None => Ok(Err(turn_over())),
        }
    }

    /// Opens what a burst's writes run in together ([`together`](Self::together)), so that
    /// they can be undone together ([`undo`](Self::undo)): nothing when the turn began the
    /// batch (its transaction is theirs alone), else a savepoint.
    pub(crate) fn guard(&mut self) -> Result<(), DomainError> {
        match (&mut self.conn, self.began) {
            (Some(_), true) => Ok(()),
            (Some(conn), false) => begin(conn),
            (None, _) => Err(turn_over()),
        }
    }

    /// Runs `work` inside the guard with no savepoint of its own: a write that fails after it
    /// changed a row can only be undone with every write of the guard. A panic is handed back.
    pub(crate) fn together<T>(
        &mut self,
        work: impl FnOnce(&mut SqliteConnection) -> RepoResult<T>,
    ) -> std::thread::Result<RepoResult<T>> {
        match &mut self.conn {
            Some(conn) => self.writer.unguarded(conn, work),
            None => Ok(Err(turn_over())),
        }
    }

    /// The rows the connection's statements have changed since it opened (SQLite's
    /// `total_changes()`): unchanged across a write, the write changed nothing.
    pub(crate) fn total_changes(&mut self) -> RepoResult<i64> {
        let conn = self.conn.as_mut().ok_or_else(turn_over)?;
        Ok(TotalChanges.get_result(conn).map_err(StoreError::from)?)
    }

    /// Keeps the `writes` made [`together`](Self::together): closes the guard.
    pub(crate) fn keep(&mut self, writes: u64) -> Result<(), DomainError> {
        let conn = self.conn.as_mut().ok_or_else(turn_over)?;
        if !self.began {
            commit(conn).inspect_err(|_| self.batch.broken.store(true, Ordering::Relaxed))?;
        }
        self.writer.writes.fetch_add(writes, Ordering::Relaxed);
        Ok(())
    }

    /// Undoes every write made [`together`](Self::together), so that they can run again,
    /// each in a savepoint of its own: rolls back the guard's savepoint, or the batch's
    /// transaction and begins it again. If that fails, the batch is broken (rolled back when
    /// the turn leaves).
    pub(crate) fn undo(&mut self) -> Result<(), DomainError> {
        let Self {
            writer,
            conn,
            batch,
            began,
        } = self;
        let conn = conn.as_mut().ok_or_else(turn_over)?;
        writer.reruns.fetch_add(1, Ordering::Relaxed);
        let undone = if *began {
            unwind_to(conn, 0).and_then(|()| writer.begin_by(conn, Instant::now() + writer.wait))
        } else {
            unwind_to(conn, 1)
        };
        undone.inspect_err(|_| batch.broken.store(true, Ordering::Relaxed))
    }

    /// Whether a savepoint or an undo failed, which leaves the batch to be rolled back.
    pub(crate) fn is_broken(&self) -> bool {
        self.batch.broken.load(Ordering::Relaxed)
    }

    /// The batch's connection, for reads that must see the writes made before them (which no
    /// other connection sees before the commit).
    pub(crate) fn connection(&mut self) -> Option<&mut SqliteConnection> {
        self.conn.as_mut()
    }

    /// Leaves the connection: hands the open batch to a writer waiting for it, or commits it;
    /// then waits for the batch's outcome, which is that of every write of the turn.
    pub(crate) fn finish(mut self) -> Result<(), DomainError> {
        self.leave()
    }

    fn leave(&mut self) -> Result<(), DomainError> {
        let conn = self.conn.take().ok_or_else(turn_over)?;
        self.writer.leave(conn, &self.batch)
    }
}

fn turn_over() -> DomainError {
    DomainError::Storage("the writer's turn is over".into())
}

/// A turn dropped unfinished (a panic on its way) still leaves, so that the connection and the
/// batch go on.
impl Drop for Turn {
    fn drop(&mut self) {
        if self.conn.is_some() {
            let _ = self.leave();
        }
    }
}

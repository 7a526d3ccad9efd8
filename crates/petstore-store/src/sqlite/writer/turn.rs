//! A writer's time with the connection ([`Turn`]): one write, or every write of an executor's
//! burst, each in a savepoint of the open batch.

use std::panic::resume_unwind;
use std::sync::Arc;

use diesel::sqlite::SqliteConnection;
use petstore_core::{DomainError, RepoResult};

use super::{Batch, GroupWriter};

/// One writer's time with the connection, in the open batch ([`GroupWriter::turn`]). Its
/// writes return before the batch commits; [`finish`](Self::finish) leaves and answers the
/// batch's outcome, which is every one of them: until then, none may be acknowledged.
pub(crate) struct Turn {
    pub(super) writer: Arc<GroupWriter>,
    /// `None` once the turn has left.
    pub(super) conn: Option<SqliteConnection>,
    pub(super) batch: Arc<Batch>,
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
        } = self;
        match conn {
            Some(conn) => writer.in_savepoint(conn, batch, work),
            None => Ok(Err(turn_over())),
        }
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

//! The writer connection's transaction levels, opened and closed through Diesel's transaction
//! manager: the batch's transaction at level 1, each write's savepoint at level 2. Kept apart
//! from the group commit (`writer.rs`), which decides when each is opened, kept or undone.

use diesel::connection::{AnsiTransactionManager, TransactionManager};
use diesel::result::QueryResult;
use diesel::sqlite::SqliteConnection;
use petstore_core::DomainError;

use crate::error::StoreError;

type Manager = AnsiTransactionManager;

// Transactions and savepoints go through Diesel's transaction manager, so that Diesel's own
// nested transactions (it inserts several rows at once inside one) become savepoints too.
pub(super) fn step(result: QueryResult<()>) -> Result<(), DomainError> {
    result.map_err(|e| StoreError::from(e).into())
}

pub(super) fn begin_immediate(conn: &mut SqliteConnection) -> Result<(), DomainError> {
    step(Manager::begin_transaction_sql(conn, "BEGIN IMMEDIATE"))
}

/// Opens a savepoint (a nested level) or, at depth 0, a transaction.
pub(super) fn begin(conn: &mut SqliteConnection) -> Result<(), DomainError> {
    step(<Manager as TransactionManager<SqliteConnection>>::begin_transaction(conn))
}

/// Releases the innermost savepoint or, at depth 1, commits.
pub(super) fn commit(conn: &mut SqliteConnection) -> Result<(), DomainError> {
    step(<Manager as TransactionManager<SqliteConnection>>::commit_transaction(conn))
}

/// Rolls back the innermost level.
fn rollback(conn: &mut SqliteConnection) -> Result<(), DomainError> {
    step(<Manager as TransactionManager<SqliteConnection>>::rollback_transaction(conn))
}

/// How many transaction levels are open, or `None` if Diesel's manager is broken.
pub(super) fn depth(conn: &mut SqliteConnection) -> Option<u32> {
    <Manager as TransactionManager<SqliteConnection>>::transaction_manager_status_mut(conn)
        .transaction_depth()
        .ok()
        .map(|depth| depth.map_or(0, |d| d.get()))
}

/// Rolls back every level above `level` (a panic may have left Diesel's own levels open).
pub(super) fn unwind_to(conn: &mut SqliteConnection, level: u32) -> Result<(), DomainError> {
    loop {
        match depth(conn) {
            Some(open) if open > level => rollback(conn)?,
            Some(_) => return Ok(()),
            None => {
                return Err(DomainError::Storage(
                    "the transaction manager is broken".into(),
                ));
            }
        }
    }
}

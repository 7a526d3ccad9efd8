//! The repository traits on one SQLite connection inside one transaction: [`SqliteTx`], and
//! one file per aggregate implementing that aggregate's reader and writer.

use diesel::sqlite::SqliteConnection;
use petstore_core::{DomainError, PageSize, RepoResult};

use crate::error::{StoreError, Violation, violation};

mod catalogue;
mod events;
mod idempotency;
mod inventory;
mod keys;
mod orders;
mod webhooks;

/// One transaction's view of the database. `SqliteStore` opens the transaction around it.
pub(crate) struct SqliteTx<'c> {
    pub(crate) conn: &'c mut SqliteConnection,
}

/// A page query reads one row more than the page holds, to tell whether another page follows.
pub(crate) fn probe(limit: PageSize) -> i64 {
    i64::from(limit.get()) + 1
}

pub(crate) fn convert<R, T: TryFrom<R, Error = StoreError>>(rows: Vec<R>) -> RepoResult<Vec<T>> {
    rows.into_iter()
        .map(|row| T::try_from(row).map_err(DomainError::from))
        .collect()
}

pub(crate) fn convert_one<R, T: TryFrom<R, Error = StoreError>>(
    row: Option<R>,
) -> RepoResult<Option<T>> {
    row.map(T::try_from).transpose().map_err(DomainError::from)
}

/// An UPDATE or DELETE by id touched no row: the use case checked the row exists in this
/// same transaction, so this is a store bug, not a client error.
pub(crate) fn exactly_one(affected: usize, what: &str, id: i64) -> RepoResult<()> {
    if affected == 1 {
        Ok(())
    } else {
        Err(DomainError::storage(format!(
            "{what} {id}: expected to change 1 row, changed {affected}"
        )))
    }
}

/// Maps a constraint the schema enforces to the domain refusal it stands for; any other
/// failure goes through the store's general mapping.
pub(crate) fn refuse(
    error: diesel::result::Error,
    refusal: impl FnOnce(Violation) -> Option<DomainError>,
) -> DomainError {
    violation(&error)
        .and_then(refusal)
        .unwrap_or_else(|| StoreError::from(error).into())
}

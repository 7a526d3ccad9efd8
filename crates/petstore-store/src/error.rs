//! The store's error type, and its one mapping into the domain's.

use diesel::result::{DatabaseErrorKind, Error as DieselError};
use petstore_core::DomainError;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database file could not be opened.
    #[error("cannot open the database: {0}")]
    Connect(#[from] diesel::ConnectionError),
    /// No connection became free in time, or none could be made.
    #[error("no database connection available: {0}")]
    Pool(#[from] r2d2::Error),
    /// A statement failed.
    #[error("database error: {0}")]
    Query(#[from] DieselError),
    /// Applying or reverting migrations failed.
    #[error("migrations failed: {0}")]
    Migration(String),
    /// A stored value breaks the domain's rules (written by something other than this store).
    #[error("stored data is invalid: {0}")]
    Corrupt(String),
    /// A use case refused inside a transaction; the transaction was rolled back.
    #[error(transparent)]
    Domain(#[from] DomainError),
}

/// The explicit mapping from the store's errors to the domain's.
///
/// A busy or locked database and a pool time-out are `Unavailable` (worth retrying, 503);
/// a refusal from a use case passes through unchanged; everything else is `Storage` (500),
/// its text kept for the log.
impl From<StoreError> for DomainError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Domain(refusal) => refusal,
            StoreError::Pool(e) => DomainError::Unavailable(e.to_string()),
            StoreError::Query(e) if is_busy(&e) => DomainError::Unavailable(e.to_string()),
            other => DomainError::Storage(other.to_string()),
        }
    }
}

/// SQLite's "database is locked" (SQLITE_BUSY, after `busy_timeout`) and "database table is
/// locked" (SQLITE_LOCKED). Diesel reports both as an unknown kind, with SQLite's message.
fn is_busy(error: &DieselError) -> bool {
    match error {
        DieselError::DatabaseError(_, info) => {
            let message = info.message();
            message.contains("database is locked") || message.contains("database table is locked")
        }
        _ => false,
    }
}

/// A constraint of the schema that a statement broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Violation {
    Unique,
    ForeignKey,
    /// A trigger's `RAISE(ABORT, code)`: the code of the rule it guards.
    Rule(&'static str),
}

/// Which constraint `error` reports, if any.
pub(crate) fn violation(error: &DieselError) -> Option<Violation> {
    const RULES: [&str; 4] = [
        "unknown_pet",
        "pet_has_open_orders",
        "invalid_transition",
        "order_not_cancellable",
    ];
    let DieselError::DatabaseError(kind, info) = error else {
        return None;
    };
    match kind {
        DatabaseErrorKind::UniqueViolation => Some(Violation::Unique),
        DatabaseErrorKind::ForeignKeyViolation => Some(Violation::ForeignKey),
        // SQLite runs ON DELETE RESTRICT as an internal trigger, so that refusal arrives with
        // the trigger's error code and only its message says what it is.
        _ if info.message() == "FOREIGN KEY constraint failed" => Some(Violation::ForeignKey),
        _ => RULES
            .into_iter()
            .find(|code| info.message() == *code)
            .map(Violation::Rule),
    }
}

/// Converts query results inside repository methods.
pub(crate) trait QueryResultExt<T> {
    /// The domain's view of this result.
    fn or_storage(self) -> Result<T, DomainError>;
}

impl<T> QueryResultExt<T> for Result<T, DieselError> {
    fn or_storage(self) -> Result<T, DomainError> {
        self.map_err(|e| StoreError::from(e).into())
    }
}

//! The store's error type, and its one mapping into the domain's.

use diesel::result::{DatabaseErrorKind, Error as DieselError};
use petstore_core::{DomainError, Failure, ValidationError};

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
/// a refusal from a use case passes through unchanged; a value a `CHECK` refuses is a
/// validation failure (400); everything else is `Storage` (500), with the error kept as its
/// source for the log.
impl From<StoreError> for DomainError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Domain(refusal) => refusal,
            // The schema refused a value the domain let through: the request's fault, not a
            // failure of the store (the domain's own checks name the field when they catch it).
            StoreError::Query(e) if violation(&e) == Some(Violation::Check) => {
                DomainError::Validation(ValidationError::new(
                    "body",
                    "a value is outside what the service can store",
                ))
            }
            busy @ (StoreError::Pool(_) | StoreError::Query(_)) if is_busy(&busy) => {
                DomainError::Unavailable(Failure::caused_by(busy))
            }
            other => DomainError::Storage(Failure::caused_by(other)),
        }
    }
}

/// A pool time-out, SQLite's "database is locked" (SQLITE_BUSY, after `busy_timeout`) and
/// "database table is locked" (SQLITE_LOCKED). Diesel reports the last two as an unknown kind,
/// with SQLite's message.
fn is_busy(error: &StoreError) -> bool {
    match error {
        StoreError::Pool(_) => true,
        StoreError::Query(DieselError::DatabaseError(_, info)) => {
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
    /// A `CHECK` on a column: a value the domain should have refused.
    Check,
    /// A trigger's `RAISE(ABORT, code)`: the rule it guards.
    Rule(Rule),
}

/// The domain rules the schema's triggers guard as well, named by the code they raise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    UnknownPet,
    PetHasOpenOrders,
    InvalidTransition,
    OrderNotCancellable,
}

impl Rule {
    const ALL: [Rule; 4] = [
        Rule::UnknownPet,
        Rule::PetHasOpenOrders,
        Rule::InvalidTransition,
        Rule::OrderNotCancellable,
    ];

    /// The code the trigger raises: the domain error code of the rule.
    const fn code(self) -> &'static str {
        match self {
            Rule::UnknownPet => "unknown_pet",
            Rule::PetHasOpenOrders => "pet_has_open_orders",
            Rule::InvalidTransition => "invalid_transition",
            Rule::OrderNotCancellable => "order_not_cancellable",
        }
    }
}

/// Which constraint `error` reports, if any.
pub(crate) fn violation(error: &DieselError) -> Option<Violation> {
    let DieselError::DatabaseError(kind, info) = error else {
        return None;
    };
    match kind {
        DatabaseErrorKind::UniqueViolation => Some(Violation::Unique),
        DatabaseErrorKind::ForeignKeyViolation => Some(Violation::ForeignKey),
        DatabaseErrorKind::CheckViolation => Some(Violation::Check),
        // SQLite runs ON DELETE RESTRICT as an internal trigger, so that refusal arrives with
        // the trigger's error code and only its message says what it is.
        _ if info.message() == "FOREIGN KEY constraint failed" => Some(Violation::ForeignKey),
        _ if info.message().starts_with("CHECK constraint failed") => Some(Violation::Check),
        _ => Rule::ALL
            .into_iter()
            .find(|rule| info.message() == rule.code())
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

//! The store's error type, and its one mapping into the domain's.

use diesel::result::{DatabaseErrorKind, Error as DieselError};
use petstore_core::{DomainError, Failure, ValidationError};

mod violation;

pub(crate) use violation::{Rule, Violation, violation};

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database file could not be opened.
    #[error("cannot open the database: {0}")]
    Connect(#[from] diesel::ConnectionError),
    /// The database server could not be reached, or refused the connection.
    #[error("cannot connect to the database {database}: {cause}")]
    Unreachable {
        /// The database, as `Database` shows it: never with its password.
        database: String,
        /// What the client library said.
        cause: String,
    },
    /// No connection became free in time, or none could be made.
    #[error("no database connection available: {0}")]
    Pool(#[from] r2d2::Error),
    /// A statement failed.
    #[error("database error: {0}")]
    Query(#[from] DieselError),
    /// The configuration names no database this store can open.
    #[error("{0}")]
    Config(String),
    /// The database file was removed or replaced under the running store.
    #[error("{0}")]
    FileGone(String),
    /// The disk that holds the database file has (almost) no room left.
    #[error("{0}")]
    NoRoom(String),
    /// A commit failed on the disk (SQLite): whether it took effect is unknown until the
    /// file is opened afresh, so the store takes no more writes until the process restarts.
    #[error(
        "writes stopped: a commit failed on the disk ({0}), so the database file's state is \
         unknown until the service is restarted"
    )]
    WritesStopped(String),
    /// Applying or reverting migrations failed.
    #[error("migrations failed: {0}")]
    Migration(String),
    /// The database is another program's: its migration table (if it has one) does not
    /// record this service's first migration. It is left as it was.
    #[error(
        "{database} is not a pet store database: it holds {}, and {}. Nothing was changed. Give \
         the service a database of its own: a new SQLite file, or an empty PostgreSQL database \
         or schema",
        if tables.is_empty() { "no tables".to_owned() } else { tables.join(", ") },
        if migrations.is_empty() {
            "no migration of this service (__diesel_schema_migrations)".to_owned()
        } else {
            format!(
                "another program's migrations ({} in __diesel_schema_migrations), none of this \
                 service's",
                migrations.join(", ")
            )
        }
    )]
    NotOurs {
        /// The database, as `Database` shows it.
        database: String,
        /// Its tables (its migration table aside).
        tables: Vec<String>,
        /// The versions its migration table records, none of them this service's first.
        migrations: Vec<String>,
    },
    /// A newer version finished its upgrade on the database (`migrate --finish`): it holds a
    /// migration this binary does not know that may drop or change what this binary uses.
    #[error(
        "{database} was migrated by a newer version of petstore, which finished its upgrade: \
         this binary ({}) does not know migration {}. Nothing was changed. Run the newer \
         version, or restore a backup this version made",
        env!("CARGO_PKG_VERSION"),
        unknown.join(", ")
    )]
    Newer {
        /// The database, as `Database` shows it.
        database: String,
        /// The migrations it holds that this binary lacks.
        unknown: Vec<String>,
    },
    /// A SQLite file read with no log beside it was opened by another process during the
    /// read (`sqlite::setup::Untouched`): what was read may not hold together.
    #[error(
        "{database} was opened by another process while it was read, so what was read may not \
         hold together. Nothing was written. Run it again: with every node stopped, or while \
         one serves"
    )]
    ChangedWhileRead {
        /// The database, as `Database` shows it.
        database: String,
    },
    /// `migrate --finish` by a binary older than the one whose additive migrations the database
    /// already holds: only the newer binary knows what finishing its upgrade means.
    #[error(
        "{database} is being upgraded to a newer version of petstore: it holds migration {}, \
         which this binary ({}) does not know. Nothing was changed. Run `petstore migrate \
         --finish` with the newer version",
        ahead.join(", "),
        env!("CARGO_PKG_VERSION")
    )]
    FinishBelongsToNewer {
        /// The database, as `Database` shows it.
        database: String,
        /// The newer version's additive migrations it holds.
        ahead: Vec<String>,
    },
    /// `migrate --finish` while nodes that do not know every migration of this version serve.
    #[error(
        "the upgrade cannot be finished: {} still serve with fewer migrations than this version \
         knows. Nothing was changed. Stop or upgrade them first (a node that stopped is no \
         longer seen 30 s after its last heartbeat), or give --force",
        nodes.join(", ")
    )]
    OlderNodesAlive {
        /// Each such node, with what it knows and when it was seen.
        nodes: Vec<String>,
    },
    /// The database was left by an older version, and a command that only reads does not
    /// migrate it.
    #[error(
        "{database} was left by an older version of petstore: migration {} is not applied, and \
         this command only reads. Run `petstore migrate` on it first (with this version)",
        pending.join(", ")
    )]
    Older {
        /// The database, as `Database` shows it.
        database: String,
        /// This version's migrations it has not had.
        pending: Vec<String>,
    },
    /// A start named another currency than the one the shop prices in.
    #[error(
        "the shop on this database prices in {stored}, and this start asked for {wanted} \
         (--currency): a \
         shop's currency is chosen once. Nothing was changed. Start with --currency {stored}, \
         or set up a new shop on a new database"
    )]
    CurrencyChanged {
        /// The currency the shop prices in.
        stored: petstore_core::Currency,
        /// The currency the start asked for.
        wanted: petstore_core::Currency,
    },
    /// Another transaction recorded an idempotency key that this one recorded too, after this
    /// one looked the key up and found nothing fresh: run again, the write finds that record
    /// and replays it.
    #[error("the idempotency key was recorded by another transaction meanwhile")]
    KeyRecorded,
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
            busy if is_busy(&busy) => DomainError::Unavailable(Failure::caused_by(busy)),
            other => DomainError::Storage(Failure::caused_by(other)),
        }
    }
}

/// Failures a retry may get past: a pool time-out; SQLite's "database is locked"
/// (SQLITE_BUSY, after `busy_timeout`) and "database table is locked" (SQLITE_LOCKED), which
/// Diesel reports as an unknown kind with SQLite's message; a PostgreSQL connection that broke
/// or a server that is stopping or starting; and a transaction that conflicted with another
/// (serialization failure, deadlock) more often than the store retries.
fn is_busy(error: &StoreError) -> bool {
    match error {
        StoreError::Pool(_)
        | StoreError::Unreachable { .. }
        | StoreError::FileGone(_)
        | StoreError::NoRoom(_)
        | StoreError::WritesStopped(_)
        | StoreError::KeyRecorded => true,
        StoreError::Query(error) => is_transient(error) || is_diesel_conflict(error),
        _ => false,
    }
}

/// Whether the connection to the server broke (or the server ended it) under a statement:
/// if that statement was a `COMMIT`, the server may have committed before the answer was lost.
pub(crate) fn is_connection_lost(error: &StoreError) -> bool {
    matches!(error, StoreError::Query(error) if is_diesel_connection_lost(error))
}

fn is_diesel_connection_lost(error: &DieselError) -> bool {
    match error {
        DieselError::RollbackErrorOnCommit { commit_error, .. } => {
            is_diesel_connection_lost(commit_error)
        }
        DieselError::DatabaseError(
            DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand,
            _,
        ) => true,
        DieselError::DatabaseError(_, info) => CONNECTION_LOST
            .iter()
            .any(|text| info.message().contains(text)),
        _ => false,
    }
}

/// What libpq and the server say when a connection ends under a statement.
const CONNECTION_LOST: [&str; 4] = [
    "terminating connection",
    "server closed the connection",
    "no connection to the server",
    "could not receive data from server",
];

fn is_transient(error: &DieselError) -> bool {
    if is_diesel_connection_lost(error) {
        return true;
    }
    match error {
        // A server that became read-only (a primary demoted, a standby not yet promoted)
        // takes writes again once a primary is found; the pool drops such connections.
        DieselError::DatabaseError(DatabaseErrorKind::ReadOnlyTransaction, _) => true,
        DieselError::DatabaseError(_, info) => {
            let message = info.message();
            [
                "database is locked",
                "database table is locked",
                "the database system is",
                // The server gave up on a statement (`statement_timeout`, a lock wait): the
                // transaction is rolled back, and a retry may work. (An idle transaction it
                // ended is a lost connection, "terminating connection …".)
                "canceling statement due to",
            ]
            .iter()
            // The disk is full, the file read-only, or the disk failing: the request was fine
            // and a retry may work once the operator has acted.
            .chain(DISK_FAILURES.iter())
            .any(|text| message.contains(text))
        }
        _ => false,
    }
}

/// What SQLite says when the disk or the file, not the request, keeps a write from happening.
const DISK_FAILURES: [&str; 3] = [
    "database or disk is full",
    "attempt to write a readonly database",
    "disk I/O error",
];

/// Whether a write failed because the database cannot take writes now (disk full, file
/// read-only, disk failing): the store is then not ready until a write succeeds again.
pub(crate) fn is_disk_failure(error: &DomainError) -> bool {
    matches!(
        unavailable_cause(error),
        Some(StoreError::Query(DieselError::DatabaseError(_, info)))
            if DISK_FAILURES.iter().any(|text| info.message().contains(text))
    )
}

/// Whether an `Unavailable` failure is the storage's fault (the disk full, failing or
/// read-only, the database file removed or replaced) rather than a busy database: the same
/// answer to the client (503, retry), but an operator must act, so the client is told which.
pub fn is_storage_fault(failure: &Failure) -> bool {
    let cause = std::error::Error::source(failure).and_then(|e| e.downcast_ref::<StoreError>());
    match cause {
        Some(StoreError::FileGone(_) | StoreError::NoRoom(_) | StoreError::WritesStopped(_)) => {
            true
        }
        Some(StoreError::Query(DieselError::DatabaseError(_, info))) => DISK_FAILURES
            .iter()
            .any(|text| info.message().contains(text)),
        _ => false,
    }
}

/// Whether a failed commit may still have taken effect: SQLite's "disk I/O error" at `COMMIT`
/// is most often the `fsync` of the log failing after the transaction's frames were written,
/// and the next process to open the file replays them if they reached the disk. (A full disk
/// or a read-only file fails before anything is written: those commits did not happen.)
pub(crate) fn is_commit_in_doubt(error: &DomainError) -> bool {
    matches!(
        unavailable_cause(error),
        Some(StoreError::Query(DieselError::DatabaseError(_, info)))
            if info.message().contains("disk I/O error")
    )
}

/// The store's own error under an `Unavailable` that came from it.
fn unavailable_cause(error: &DomainError) -> Option<&StoreError> {
    let DomainError::Unavailable(failure) = error else {
        return None;
    };
    std::error::Error::source(failure)?.downcast_ref::<StoreError>()
}

/// A serialization failure, by the kind Diesel gives it, or a deadlock. Diesel 2.3 gives a
/// deadlock (SQLSTATE 40P01) no kind of its own and shows no SQLSTATE, so a deadlock is
/// known by the server's English text only: on a server whose `lc_messages` is another
/// language it is answered as a storage failure instead of run again. No write of this
/// service's waits on locks in a cycle (each locks its pet's or order's row first), and a
/// burst, whose writes may, bounds its waits and runs its jobs alone on any failure that is
/// not a refusal (`postgres/burst.rs`), reading no message.
fn is_diesel_conflict(error: &DieselError) -> bool {
    match error {
        DieselError::DatabaseError(DatabaseErrorKind::SerializationFailure, _) => true,
        DieselError::DatabaseError(_, info) => info.message().contains("deadlock detected"),
        _ => false,
    }
}

/// Whether a write failed only because it met a concurrent one (a serialization failure, a
/// deadlock, an idempotency key recorded meanwhile): run again, it will likely succeed.
pub(crate) fn is_conflict(error: &DomainError) -> bool {
    match unavailable_cause(error) {
        Some(StoreError::Query(e)) => is_diesel_conflict(e),
        Some(StoreError::KeyRecorded) => true,
        _ => false,
    }
}

/// Whether a write failed because its server takes no writes (read-only, or a standby): the
/// connection is of no use to writes until it reaches another server.
pub(crate) fn is_read_only(error: &DomainError) -> bool {
    matches!(
        unavailable_cause(error),
        Some(StoreError::Query(DieselError::DatabaseError(
            DatabaseErrorKind::ReadOnlyTransaction,
            _
        )))
    )
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

#[cfg(test)]
mod tests;

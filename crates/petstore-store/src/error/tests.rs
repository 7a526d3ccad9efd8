use diesel::result::DatabaseErrorInformation;

use super::*;

#[derive(Debug)]
struct Said(&'static str);

impl DatabaseErrorInformation for Said {
    fn message(&self) -> &str {
        self.0
    }
    fn details(&self) -> Option<&str> {
        None
    }
    fn hint(&self) -> Option<&str> {
        None
    }
    fn table_name(&self) -> Option<&str> {
        None
    }
    fn column_name(&self) -> Option<&str> {
        None
    }
    fn constraint_name(&self) -> Option<&str> {
        None
    }
    fn statement_position(&self) -> Option<i32> {
        None
    }
}

fn mapped(kind: DatabaseErrorKind, message: &'static str) -> DomainError {
    StoreError::Query(DieselError::DatabaseError(kind, Box::new(Said(message)))).into()
}

#[test]
fn a_full_read_only_or_failing_disk_is_unavailable_not_a_bug() {
    for message in [
        "database or disk is full",
        "attempt to write a readonly database",
        "disk I/O error",
        "database is locked",
    ] {
        let error = mapped(DatabaseErrorKind::Unknown, message);
        assert_eq!(error.code(), "unavailable", "{message}");
    }
    let gone: DomainError = StoreError::FileGone("petstore.db was removed".into()).into();
    assert_eq!(gone.code(), "unavailable");
    let bug = mapped(DatabaseErrorKind::Unknown, "no such column: x");
    assert_eq!(bug.code(), "internal");
}

#[test]
fn only_the_disk_or_the_file_marks_the_database_as_not_taking_writes() {
    for message in [
        "database or disk is full",
        "attempt to write a readonly database",
        "disk I/O error",
    ] {
        assert!(is_disk_failure(&mapped(
            DatabaseErrorKind::Unknown,
            message
        )));
    }
    let busy = mapped(DatabaseErrorKind::Unknown, "database is locked");
    assert!(
        !is_disk_failure(&busy),
        "a busy database still takes writes"
    );
    let gone: DomainError = StoreError::FileGone("petstore.db was removed".into()).into();
    assert!(!is_disk_failure(&gone), "a removed file is its own check");
}

#[test]
fn the_storage_is_at_fault_for_a_disk_or_a_file_not_for_a_busy_database() {
    let fault = |error: &DomainError| match error {
        DomainError::Unavailable(failure) => is_storage_fault(failure),
        _ => false,
    };
    for message in [
        "database or disk is full",
        "attempt to write a readonly database",
        "disk I/O error",
    ] {
        assert!(
            fault(&mapped(DatabaseErrorKind::Unknown, message)),
            "{message}"
        );
    }
    let gone: DomainError = StoreError::FileGone("petstore.db was removed".into()).into();
    assert!(fault(&gone));
    let room: DomainError = StoreError::NoRoom("12 bytes free".into()).into();
    assert!(fault(&room));
    let busy = mapped(DatabaseErrorKind::Unknown, "database is locked");
    assert!(!fault(&busy), "a busy database is no fault of the storage");
}

#[test]
fn only_a_commit_the_disk_failed_to_sync_is_in_doubt() {
    assert!(is_commit_in_doubt(&mapped(
        DatabaseErrorKind::Unknown,
        "disk I/O error"
    )));
    for message in [
        "database or disk is full",
        "attempt to write a readonly database",
        "database is locked",
    ] {
        assert!(
            !is_commit_in_doubt(&mapped(DatabaseErrorKind::Unknown, message)),
            "{message}: nothing was written"
        );
    }
    let stopped: DomainError = StoreError::WritesStopped("disk I/O error".into()).into();
    assert!(!is_commit_in_doubt(&stopped), "refused before it began");
    assert!(matches!(&stopped, DomainError::Unavailable(failure) if is_storage_fault(failure)));
}

#[test]
fn a_connection_lost_under_a_commit_is_told_from_a_refused_one() {
    let query = |kind, message| {
        StoreError::Query(DieselError::DatabaseError(kind, Box::new(Said(message))))
    };
    assert!(is_connection_lost(&query(
        DatabaseErrorKind::ClosedConnection,
        "server closed the connection unexpectedly"
    )));
    assert!(is_connection_lost(&query(
        DatabaseErrorKind::Unknown,
        "terminating connection due to administrator command"
    )));
    let lost_then_no_rollback = StoreError::Query(DieselError::RollbackErrorOnCommit {
        rollback_error: Box::new(DieselError::BrokenTransactionManager),
        commit_error: Box::new(DieselError::DatabaseError(
            DatabaseErrorKind::UnableToSendCommand,
            Box::new(Said("no connection to the server")),
        )),
    });
    assert!(is_connection_lost(&lost_then_no_rollback));
    for (kind, message) in [
        (
            DatabaseErrorKind::SerializationFailure,
            "could not serialize access",
        ),
        (
            DatabaseErrorKind::ForeignKeyViolation,
            "violates foreign key constraint",
        ),
        (DatabaseErrorKind::Unknown, "deadlock detected"),
    ] {
        assert!(
            !is_connection_lost(&query(kind, message)),
            "{message}: refused"
        );
    }
}

#[test]
fn a_statement_the_server_cancelled_is_unavailable_not_a_bug() {
    let cancelled = mapped(
        DatabaseErrorKind::Unknown,
        "canceling statement due to statement timeout",
    );
    assert_eq!(cancelled.code(), "unavailable");
}

#[test]
fn a_conflict_is_retried_and_a_check_is_the_request_s_fault() {
    let deadlock = mapped(DatabaseErrorKind::Unknown, "deadlock detected");
    assert!(is_conflict(&deadlock));
    let serialization = mapped(
        DatabaseErrorKind::SerializationFailure,
        "could not serialize",
    );
    assert!(
        is_conflict(&serialization),
        "by Diesel's kind, whatever the text"
    );
    let statement = mapped(
        DatabaseErrorKind::Unknown,
        "canceling statement due to statement timeout",
    );
    assert!(
        !is_conflict(&statement),
        "a slow statement is not run again"
    );
    // A lock wait a burst bounded is no conflict here: the burst runs its jobs alone on any
    // failure that is not a refusal, reading no text (`postgres/burst.rs`).
    let lock_wait = mapped(
        DatabaseErrorKind::Unknown,
        "canceling statement due to lock timeout",
    );
    assert!(!is_conflict(&lock_wait));
    let recorded = DomainError::from(StoreError::KeyRecorded);
    assert!(is_conflict(&recorded) && recorded.code() == "unavailable");
    let check = mapped(
        DatabaseErrorKind::CheckViolation,
        "CHECK constraint failed: stock",
    );
    assert_eq!(check.code(), "validation_failed");
}

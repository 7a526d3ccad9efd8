//! The one guard of PostgreSQL's point reads. A point read (`read_one`) runs in autocommit,
//! where each statement sees a snapshot of its own: one that sent two could answer from two
//! moments. Every way a point read reaches the database (the store's own `read_one`, and a
//! read burst's) runs it through [`one_statement`], so debug builds (every test run, the HTTP
//! tests on PostgreSQL included) fail a point read that sends a second statement.

use diesel::pg::PgConnection;

/// Runs the point read `read` on `conn`; in debug builds, panics if it sent more than one
/// statement (`read` answered from rows already fetched sends none).
pub(super) fn one_statement<T>(
    conn: &mut PgConnection,
    read: impl FnOnce(&mut PgConnection) -> T,
) -> T {
    #[cfg(debug_assertions)]
    {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicU64, Ordering};

        use diesel::connection::{
            Connection, Instrumentation, InstrumentationEvent, get_default_instrumentation,
        };

        let statements = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&statements);
        // The process's own instrumentation (tests record statements with one) sees every
        // event still.
        let mut beside = get_default_instrumentation();
        conn.set_instrumentation(move |event: InstrumentationEvent<'_>| {
            if matches!(event, InstrumentationEvent::StartQuery { .. }) {
                counter.fetch_add(1, Ordering::Relaxed);
            }
            if let Some(beside) = beside.as_mut() {
                beside.on_connection_event(event);
            }
        });
        let answer = read(conn);
        conn.set_instrumentation(get_default_instrumentation());
        let sent = statements.load(Ordering::Relaxed);
        assert!(
            sent <= 1,
            "a read_one sent {sent} statements, each in a snapshot of its own: use read"
        );
        answer
    }
    #[cfg(not(debug_assertions))]
    read(conn)
}

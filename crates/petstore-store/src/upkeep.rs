//! The store's own upkeep of what requests leave behind, on the executor's chore thread
//! (`executor.rs`), never on a request's path.

use std::time::Duration;

use chrono::Utc;
use petstore_core::{RECORD_LIFETIME, Store};

use crate::job::Chore;

/// How often expired idempotency records are forgotten. A create takes an expired record for
/// absent whether or not it is still there, so this only bounds the table's size: a minute
/// of records each time, deleted in one statement.
const FORGET_EXPIRED_EVERY: Duration = Duration::from_secs(60);

/// Forgets the idempotency records past their lifetime every [`FORGET_EXPIRED_EVERY`], in a
/// write of `store`'s own, when `idle` says no client's write would wait for it (SQLite's one
/// writer; PostgreSQL's writes do not wait for a delete of other rows). A failure waits for
/// the next time.
pub(crate) fn forget_expired_records<S>(store: S, idle: impl Fn() -> bool + Send + 'static) -> Chore
where
    S: Store + Send + 'static,
{
    Chore {
        every: FORGET_EXPIRED_EVERY,
        run: Box::new(move || {
            if idle() {
                let before = Utc::now() - RECORD_LIFETIME;
                let _ = store.write(|tx| tx.purge_idempotency_records(before));
            }
        }),
    }
}

//! The repository traits on one SQLite connection inside one transaction: [`SqliteTx`], and
//! one file per aggregate implementing that aggregate's reader and writer.

use diesel::sqlite::SqliteConnection;

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

//! The repository traits on one PostgreSQL connection inside one transaction: [`PgTx`], and
//! one file per aggregate implementing that aggregate's reader and writer.
//!
//! Concurrent writers are the normal case here, unlike on SQLite's single writer. Write
//! transactions run at READ COMMITTED and lock what their rule depends on before reading it
//! (`SELECT … FOR UPDATE` on the pet whose stock an order takes, the order being changed, the
//! key being revoked, the subscription being moved on; advisory locks for an idempotency key
//! and for the outbox), so a rule checked inside a transaction still holds when it commits.

use diesel::pg::PgConnection;
use diesel::prelude::*;
use diesel::sql_types::{Integer, Text};

use crate::error::QueryResultExt;
use petstore_core::RepoResult;

mod catalogue;
mod events;
mod idempotency;
mod inventory;
mod keys;
mod orders;
mod webhooks;

/// One transaction's view of the database. `PgStore` opens the transaction around it.
pub(crate) struct PgTx<'c> {
    pub(crate) conn: &'c mut PgConnection,
    /// Whether this is a write transaction: reads that a rule depends on then lock their rows.
    pub(crate) writing: bool,
}

/// The namespaces of the advisory locks this store takes (the first key of the two-key form).
#[derive(Debug, Clone, Copy)]
#[repr(i32)]
pub(crate) enum LockSpace {
    /// One lock, held by whoever is appending to the outbox, until it commits.
    Outbox = 0x7065_7401,
    /// One lock per idempotency key (its hash), held by the request using it.
    IdempotencyKey = 0x7065_7402,
    /// One lock for bootstrapping the first admin key.
    Bootstrap = 0x7065_7403,
}

impl PgTx<'_> {
    /// Takes the transaction-scoped advisory lock `(space, key)`: held until this transaction
    /// ends, by one transaction at a time.
    pub(crate) fn lock(&mut self, space: LockSpace, key: i32) -> RepoResult<()> {
        diesel::sql_query("SELECT pg_advisory_xact_lock($1, $2)")
            .bind::<Integer, _>(space as i32)
            .bind::<Integer, _>(key)
            .execute(self.conn)
            .or_storage()?;
        Ok(())
    }

    /// Takes the transaction-scoped advisory lock of `(space, name)`, by the name's hash
    /// (PostgreSQL's `hashtext`, the same on every node). Two names may share a lock; that
    /// only makes them wait for each other.
    pub(crate) fn lock_name(&mut self, space: LockSpace, name: &str) -> RepoResult<()> {
        diesel::sql_query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
            .bind::<Integer, _>(space as i32)
            .bind::<Text, _>(name)
            .execute(self.conn)
            .or_storage()?;
        Ok(())
    }
}

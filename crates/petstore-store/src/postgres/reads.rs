//! PostgreSQL's read bursts: the reads a reader thread took at once run on one connection,
//! and the pets they name ([`Row`](crate::Row)) are fetched first, in one statement
//! (`WHERE id = ANY($1)`).
//!
//! A point read is a round trip, and the thread making it sleeps through it: that sleep and
//! the server's work per statement were most of what a read cost (`docs/performance.md`). A
//! burst of reads that name their pets costs one statement in all. What a read is answered
//! from here is as fresh as a statement of its own: the burst's statement runs after every
//! one of its reads was asked for, so a read sent after a write was acknowledged sees it.
//!
//! A read of one statement (`read_one`) is answered from the rows fetched where it reads
//! one of them, and reads the database on the burst's connection for anything else. A read
//! of several statements (`read`) runs in a snapshot of its own and uses nothing fetched,
//! which was read outside that snapshot.

use std::cell::RefCell;

use diesel::prelude::*;
use diesel::r2d2::PooledConnection;
use petstore_core::{RepoResult, Snapshot, Store, Transaction};

use super::connection::PrimaryOnly;
use super::tx::PgTx;
use super::{PgStore, read_in};
use crate::fetched::Fetched;
use crate::job::{self, JobStore, Lane, ReadJob};
use crate::records::PetRowRecord;
use crate::schema::pets;

/// Runs the reads a reader thread took at once: the pets they name fetched in one statement,
/// then each read in turn on the same connection. Without a connection, each read meets
/// that failure on its own, as it would have alone.
pub(super) fn run_reads(store: &PgStore, jobs: Vec<ReadJob>) {
    match store.pool.get() {
        Ok(conn) => run_reads_on(store, conn, jobs),
        Err(_) => {
            for job in jobs {
                job.run(JobStore::over(store));
            }
        }
    }
}

/// [`run_reads`] on `conn`.
fn run_reads_on(store: &PgStore, mut conn: PooledConnection<PrimaryOnly>, jobs: Vec<ReadJob>) {
    let pets = job::named_pets(&jobs);
    let fetched = if pets.is_empty() {
        Fetched::default()
    } else {
        // A failed fetch serves nothing: each read then reads its row, and meets the
        // failure (a broken connection, a cancelled statement) itself.
        pets::table
            .filter(pets::id.eq_any(&pets))
            .select(PetRowRecord::as_select())
            .load(&mut conn.conn)
            .map(|found| Fetched::pets(&pets, found))
            .unwrap_or_default()
    };
    let burst = PgReadBurst {
        store,
        conn: RefCell::new(conn),
        fetched,
    };
    for job in jobs {
        job.run(JobStore::over(&burst));
    }
}

/// The reads of one burst, on one pooled connection, with the rows fetched for them.
struct PgReadBurst<'s> {
    store: &'s PgStore,
    conn: RefCell<PooledConnection<PrimaryOnly>>,
    fetched: Fetched,
}

impl Lane for PgReadBurst<'_> {
    fn run_read(
        &self,
        work: &mut dyn FnMut(&mut dyn Snapshot) -> RepoResult<()>,
    ) -> RepoResult<()> {
        match self.conn.try_borrow_mut() {
            Ok(mut conn) => read_in(&mut conn.conn, work),
            // A read made from inside another takes a connection of its own.
            Err(_) => Store::read(self.store, work),
        }
    }

    fn run_read_one(
        &self,
        work: &mut dyn FnMut(&mut dyn Snapshot) -> RepoResult<()>,
    ) -> RepoResult<()> {
        match self.conn.try_borrow_mut() {
            Ok(mut conn) => work(&mut PgTx::alone_with(&mut conn.conn, &self.fetched)),
            Err(_) => Store::read_one(self.store, work),
        }
    }

    /// Work handed to a reader that writes (a bug of its caller) writes as it would alone.
    fn run_write(
        &self,
        work: &mut dyn FnMut(&mut dyn Transaction) -> RepoResult<()>,
    ) -> RepoResult<()> {
        Store::write(self.store, work)
    }
}

#[cfg(test)]
mod tests;

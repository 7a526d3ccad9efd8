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
use std::sync::Arc;

use diesel::r2d2::{PooledConnection, R2D2Connection};
use petstore_core::{RepoResult, Snapshot, Store, Transaction};

use super::connection::PrimaryOnly;
use super::fetch::read_pets;
use super::point_read::one_statement;
use super::tx::PgTx;
use super::{PgStore, read_in, read_in_snapshot};
use crate::freshness::Freshness;
use crate::job::{self, Answered, JobStore, Lane, ReadJob, ThreadSpec};
use crate::known_rows::KnownRows;

/// Reader threads, and the most reads each takes at once: a burst costs about one round trip
/// however many it holds. Measured with bench/orders-postgres (32 clients, point reads, one
/// run): 3 threads taking 8 each served 0.93 of pgbench's reads, 2 taking 16 1.07, 1 taking
/// 32 1.16, and 2 taking 32 as many as 1 (1.12 against 1.09), the server spending 3 µs a read
/// against 8. Two threads, so that a read waiting on the server (a stamp behind a lock) leaves
/// another to take the reads queued behind it.
const READERS: usize = 2;
const READ_BURST: usize = 32;

/// [`READERS`] threads running the reads of `store`.
pub(super) fn readers(store: &PgStore) -> ThreadSpec<ReadJob> {
    let store = store.clone();
    ThreadSpec {
        count: READERS,
        burst: READ_BURST,
        run: Arc::new(move |jobs| run_reads(&store, jobs)),
    }
}

/// Runs the reads a reader thread took at once. With read standbys, those that may be
/// served by one go to one first (`replicas.rs`); the primary serves the rest.
fn run_reads(store: &PgStore, jobs: Vec<ReadJob>) {
    let Some(replicas) = &store.replicas else {
        return run_on_primary(store, jobs);
    };
    let (primary, any): (Vec<ReadJob>, Vec<ReadJob>) = jobs
        .into_iter()
        .partition(|job| job.freshness == Freshness::Primary);
    let mut jobs = primary;
    if !any.is_empty() {
        let routed = replicas.serve(store, any);
        if let Some((conn, ready)) = routed.standby {
            run_on_standby(store, conn, ready);
        }
        jobs.extend(routed.primary);
    }
    replicas.served_by_primary(jobs.len());
    run_on_primary(store, jobs);
}

/// Runs reads on the primary: the pets they name fetched in one statement, then each read
/// in turn on the same connection. Without a connection, each read meets that failure on
/// its own, as it would have alone.
fn run_on_primary(store: &PgStore, jobs: Vec<ReadJob>) {
    if jobs.is_empty() {
        return;
    }
    let Ok(conn) = store.pool.get() else {
        for job in jobs {
            job.run(JobStore::over(store));
        }
        return;
    };
    run_burst(store, conn, Server::Primary, jobs);
}

/// Runs reads on a read standby's connection `conn`, which has replayed far enough for each.
fn run_on_standby(store: &PgStore, conn: PooledConnection<PrimaryOnly>, jobs: Vec<ReadJob>) {
    if !jobs.is_empty() {
        run_burst(store, conn, Server::Standby, jobs);
    }
}

/// Which kind of server a burst reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Server {
    /// The primary: a read transaction stamps the feed as it begins.
    Primary,
    /// A read standby: it cannot write, so nothing is stamped; no read of the feed comes
    /// here.
    Standby,
}

/// Runs `jobs` as one burst on `conn`: the pets they name fetched in one statement, then
/// each read in turn.
fn run_burst(
    store: &PgStore,
    mut conn: PooledConnection<PrimaryOnly>,
    server: Server,
    jobs: Vec<ReadJob>,
) {
    let pets = job::named_pets(jobs.iter().filter_map(|job| job.row.as_ref()));
    let fetched = if pets.is_empty() {
        KnownRows::served_once()
    } else {
        // A failed fetch serves nothing: each read then reads its row, and meets the
        // failure (a broken connection, a cancelled statement) itself.
        read_pets(&mut conn.conn, &pets).unwrap_or_else(|_| KnownRows::served_once())
    };
    let burst = PgReadBurst {
        store,
        server,
        conn: RefCell::new(conn),
        known: RefCell::new(fetched),
    };
    // Reads that named their pet first: answered from what was fetched, they need not wait
    // behind a read of several statements (the node's watcher stamps the feed in one).
    let (named, others): (Vec<ReadJob>, Vec<ReadJob>) =
        jobs.into_iter().partition(|job| job.row.is_some());
    for job in named.into_iter().chain(others) {
        // A connection that broke under one read is not the next one's: it takes the
        // primary's, as it would have alone.
        if R2D2Connection::is_broken(&mut burst.conn.borrow_mut().conn) {
            job.run(JobStore::over(store));
        } else if server == Server::Standby {
            // A standby that fails under a read (gone since its check) costs it a second
            // run, on the primary, not an error.
            run_on_standby_or_primary(job, JobStore::over(&burst), JobStore::over(store));
        } else {
            job.run(JobStore::over(&burst));
        }
    }
}

/// Runs `job` on `standby`, a standby's store; if the infrastructure failed under it (the
/// standby gone since its check), runs it again on `primary`, which answers. A refusal by the
/// rules is the answer wherever it was met.
fn run_on_standby_or_primary(mut job: ReadJob, standby: JobStore<'_>, primary: JobStore<'_>) {
    if job.run_unless_infrastructure_fails(standby) == Answered::No {
        job.run(primary);
    }
}

/// The reads of one burst, on one pooled connection, with the rows fetched for them.
struct PgReadBurst<'s> {
    store: &'s PgStore,
    server: Server,
    conn: RefCell<PooledConnection<PrimaryOnly>>,
    known: RefCell<KnownRows>,
}

impl Lane for PgReadBurst<'_> {
    fn run_read(
        &self,
        work: &mut dyn FnMut(&mut dyn Snapshot) -> RepoResult<()>,
    ) -> RepoResult<()> {
        match self.conn.try_borrow_mut() {
            Ok(mut conn) => match self.server {
                Server::Primary => read_in(&mut conn.conn, work),
                Server::Standby => read_in_snapshot(&mut conn.conn, work),
            },
            // A read made from inside another takes a connection of its own.
            Err(_) => Store::read(self.store, work),
        }
    }

    fn run_read_one(
        &self,
        work: &mut dyn FnMut(&mut dyn Snapshot) -> RepoResult<()>,
    ) -> RepoResult<()> {
        match (self.conn.try_borrow_mut(), self.known.try_borrow_mut()) {
            (Ok(mut conn), Ok(mut known)) => one_statement(&mut conn.conn, |conn| {
                work(&mut PgTx::alone(conn, &mut known))
            }),
            _ => Store::read_one(self.store, work),
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

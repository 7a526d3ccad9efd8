//! The PostgreSQL store: one pool of connections that reads and writes share, migrations run
//! under an advisory lock, and write transactions run again when they conflict.
//!
//! Isolation: reads run in one `REPEATABLE READ READ ONLY` transaction, so every query of a
//! use case sees the same snapshot; a read of one statement (`read_one`) runs alone, in one
//! round trip. Writes run at `READ COMMITTED` and lock the rows their
//! rules depend on (see `repositories/mod.rs`): no serialization failures in normal
//! operation, and two orders for the last unit take turns on the pet's row instead of both
//! succeeding. A deadlock or serialization failure that still happens is retried here, on a
//! fresh transaction, a few times before it is reported as `unavailable`.
//!
//! A write whose connection breaks during its `COMMIT` is not reported as failed on a guess:
//! the server is asked what became of its transaction (`PgStore::write_once`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use diesel::connection::{AnsiTransactionManager as Manager, SimpleConnection, TransactionManager};
use diesel::pg::PgConnection;
use diesel_migrations::MigrationHarness;
use petstore_core::{Currency, RepoResult, Snapshot, Store, Transaction};

use crate::config::StoreConfig;
use crate::error::{StoreError, is_conflict, is_read_only};
use crate::freshness::Position;
use crate::known_rows::KnownRows;
use crate::ownership;
use crate::stats::ServerReads;
use crate::stats::{PoolState, WriterStats};
use point_read::one_statement;
use replicas::Replicas;
use tx::PgTx;

mod burst;
mod commit;
mod connection;
pub(crate) mod feed;
mod fetch;
mod held_back;
mod point_read;
mod prepared;
mod reads;
mod replicas;
mod setup;
mod tx;

pub use connection::connect_postgres;
use connection::{PgPool, takes_writes};
pub use setup::{PG_MIGRATIONS, migrate_postgres};
pub(crate) use setup::{inspect_postgres, with_migration_lock};

/// How many times a conflicting write runs again before it is reported as unavailable.
const CONFLICT_RETRIES: u32 = 5;

/// The pet store's [`Store`] on a PostgreSQL database.
#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
    counts: Arc<Counts>,
    /// How long a write may wait in the executor's queue before it is answered without
    /// running: the connection time-out, as for a connection from the pool.
    write_wait: Duration,
    /// How long a call handed to the executor may take in all ([`StoreConfig::deadline`]).
    deadline: Duration,
    /// The read standbys, if any were configured (`replicas.rs`).
    replicas: Option<Arc<Replicas>>,
}

/// Writes run and committed, for metrics, and how bursts of writes go.
#[derive(Debug, Default)]
struct Counts {
    writes: AtomicU64,
    commits: AtomicU64,
    /// Bursts that gave up their transaction, their jobs run again each alone (`burst.rs`).
    reruns: AtomicU64,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("pool", &self.pool.state())
            .finish()
    }
}

impl PgStore {
    /// Opens the database of `config`, applying pending migrations first.
    /// With `config.read_only`, opens it as it is, if it is this service's at this version:
    /// never migrated, every transaction read-only.
    pub fn open(config: &StoreConfig) -> Result<Self, StoreError> {
        if config.read_only {
            ownership::readable(inspect_postgres(config)?, &config.database)?;
        } else {
            migrate_postgres(config)?;
        }
        let pool = setup::build_pool(config)?;
        let replicas = Replicas::open(config)?;
        if let Some(replicas) = &replicas {
            Replicas::start_probes(replicas, pool.clone()).map_err(|cause| {
                StoreError::Config(format!("cannot start the read standbys' probes: {cause}"))
            })?;
        }
        Ok(Self {
            pool,
            counts: Arc::default(),
            write_wait: config.connection_timeout,
            deadline: config.deadline,
            replicas,
        })
    }

    /// The consistency token of this node's writes so far: a position at or past every
    /// commit it has answered, from which a read standby that replayed it shows them. `None`
    /// without read standbys, or while a commit's position is unknown.
    pub fn commit_position(&self) -> Option<Position> {
        self.replicas.as_ref()?.committed()
    }

    /// What each server served of the reads, with read standbys (none without).
    pub fn server_reads(&self) -> Vec<ServerReads> {
        self.replicas
            .as_ref()
            .map(|replicas| replicas.stats())
            .unwrap_or_default()
    }

    /// Whether the database answers and has every migration applied (for `/readyz`).
    pub fn check_ready(&self) -> Result<(), StoreError> {
        let mut conn = self.pool.get()?;
        takes_writes(&mut conn)?;
        let pending = conn
            .has_pending_migration(crate::upgrade::Additive(&PG_MIGRATIONS))
            .map_err(|e| StoreError::Migration(e.to_string()))?;
        if pending {
            return Err(StoreError::Migration("migrations are pending".into()));
        }
        Ok(())
    }

    /// Writes run and commits made (a burst of writes shares one commit).
    pub fn writer_stats(&self) -> WriterStats {
        WriterStats {
            writes: self.counts.writes.load(Ordering::Relaxed),
            commits: self.counts.commits.load(Ordering::Relaxed),
            reruns: self.counts.reruns.load(Ordering::Relaxed),
        }
    }

    /// The most connections its pool opens.
    pub(crate) fn connections(&self) -> usize {
        usize::try_from(self.pool.max_size()).unwrap_or(1)
    }

    /// How long a write may wait for a writer thread before it answers without running.
    pub(crate) fn write_wait(&self) -> Duration {
        self.write_wait
    }

    /// How long a call handed to the executor may take in all.
    pub(crate) fn deadline(&self) -> Duration {
        self.deadline
    }

    /// The currency the shop prices in: the one stored, or `wanted` stored now if none is
    /// (the first start); refused if another is stored ([`crate::shop`]).
    pub fn shop_currency(&self, wanted: Currency) -> Result<Currency, StoreError> {
        let mut conn = self.pool.get()?;
        crate::shop::settle_currency!(&mut conn.conn, wanted)
    }

    /// Says `node` serves (`alive`), with the migrations it knows, or that it stopped
    /// ([`crate::upgrade`]).
    pub fn heartbeat(&self, node: &str, alive: bool) -> Result<(), StoreError> {
        let mut conn = self.pool.get()?;
        crate::upgrade::heartbeat_postgres(&mut conn.conn, &PG_MIGRATIONS, node, alive)
    }

    /// Connections open and idle (for metrics).
    pub fn pool_state(&self) -> PoolState {
        let state = self.pool.state();
        PoolState {
            connections: state.connections,
            idle: state.idle_connections,
        }
    }
}

impl Store for PgStore {
    /// In one `REPEATABLE READ READ ONLY` transaction, begun once the events committed so
    /// far are stamped, in the same round trip ([`feed::STAMP_THEN_BEGIN_READ`]).
    fn read<T>(&self, work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>) -> RepoResult<T> {
        let mut conn = self.pool.get().map_err(StoreError::from)?;
        read_in(&mut conn.conn, work)
    }

    /// In autocommit: the one statement is its own transaction, and sees one snapshot.
    fn read_one<T>(&self, work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>) -> RepoResult<T> {
        let mut conn = self.pool.get().map_err(StoreError::from)?;
        one_statement(&mut conn.conn, |conn| {
            work(&mut PgTx::alone(conn, &mut KnownRows::served_once()))
        })
    }

    fn write<T>(
        &self,
        mut work: impl FnMut(&mut dyn Transaction) -> RepoResult<T>,
    ) -> RepoResult<T> {
        self.counts.writes.fetch_add(1, Ordering::Relaxed);
        let mut conflicts = 0;
        loop {
            let mut conn = self.pool.get().map_err(StoreError::from)?;
            let written = self.write_once(&mut conn, &mut work);
            conn.refused_writes = written.as_ref().is_err_and(is_read_only);
            match written {
                Err(error) if conflicts < CONFLICT_RETRIES && is_conflict(&error) => {
                    conflicts += 1;
                    // A short, growing pause lets the transaction it met finish first.
                    std::thread::sleep(Duration::from_millis(2 << conflicts));
                }
                other => {
                    if other.is_ok() {
                        self.counts.commits.fetch_add(1, Ordering::Relaxed);
                    }
                    return other;
                }
            }
        }
    }
}

crate::job::store_lane!(PgStore);

/// [`PgStore::read`] on `conn`.
fn read_in<T>(
    conn: &mut PgConnection,
    work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>,
) -> RepoResult<T> {
    read_after(conn, feed::STAMP_THEN_BEGIN_READ, work)
}

/// A read of several statements on a read standby's `conn`: one snapshot, nothing stamped.
fn read_in_snapshot<T>(
    conn: &mut PgConnection,
    work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>,
) -> RepoResult<T> {
    read_after(
        conn,
        "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
        work,
    )
}

/// `work` in the read transaction `begin` opens on `conn`.
fn read_after<T>(
    conn: &mut PgConnection,
    begin: &str,
    work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>,
) -> RepoResult<T> {
    if let Err(error) = Manager::begin_transaction_sql(conn, begin) {
        // The statements before the one that failed ran: a stamp cancelled (its lock held by
        // a commit waiting for the standby) leaves the transaction it began open and aborted,
        // unknown to Diesel, and every later use of the connection would fail with it.
        let _ = conn.batch_execute("ROLLBACK");
        return Err(StoreError::from(error).into());
    }
    match work(&mut PgTx::reading(
        &mut *conn,
        &mut KnownRows::served_once(),
    )) {
        Ok(value) => {
            Manager::commit_transaction(conn).map_err(StoreError::from)?;
            Ok(value)
        }
        Err(error) => {
            let _ = Manager::rollback_transaction(conn);
            Err(error)
        }
    }
}

#[cfg(test)]
mod tests;

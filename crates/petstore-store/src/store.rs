//! The store a deployment opens: SQLite or PostgreSQL, chosen by the `--database` it is given,
//! behind one type so that the same binary serves from either.

use petstore_core::{RepoResult, Snapshot, Store, Transaction};

use crate::config::{Database, StoreConfig};
use crate::error::StoreError;
use crate::executor::{Executor, Wake};
use crate::postgres::burst::PgWriteBurst;
use crate::postgres::{PgStore, migrate_postgres};
use crate::sqlite::burst::{ReadBurst, WriteBurst};
use crate::sqlite::{PoolState, SqliteStore, WriterStats, migrate_sqlite};

/// A [`Store`] on the database of a [`StoreConfig`]: whichever backend it names.
#[derive(Debug, Clone)]
pub enum AnyStore {
    /// A SQLite file.
    Sqlite(SqliteStore),
    /// A PostgreSQL database.
    Postgres(PgStore),
}

/// Reader threads on PostgreSQL: enough reads in flight to keep a server's cores busy, few
/// enough that a thread wakes for several (bench/orders-postgres measured 2, 4, 8 and 16).
const POSTGRES_READERS: usize = 4;

/// Writes one PostgreSQL writer takes at once, in one transaction: a commit saved per write
/// after the first, against a row lock held a little longer (bench/orders-postgres: four
/// orders to a transaction cost the server about two thirds of four; bursts of eight met
/// deadlocks between bursts far more often).
const POSTGRES_WRITE_BURST: usize = 4;

/// Reads one PostgreSQL reader takes at once, one after another: each waits for the round
/// trips of those before it, so a long burst stretches the slowest answers (a p99 of 18 to 30
/// ms with 16 against 4.5 to 7 ms with 4, for the same throughput).
const POSTGRES_READ_BURST: usize = 4;

impl AnyStore {
    /// Opens (creating a SQLite file if needed) and migrates the database of `config`.
    pub fn open(config: &StoreConfig) -> Result<Self, StoreError> {
        Ok(match config.database {
            Database::Sqlite(_) => AnyStore::Sqlite(SqliteStore::open(config)?),
            Database::Postgres(_) => AnyStore::Postgres(PgStore::open(config)?),
        })
    }

    /// Whether the database answers and has every migration applied (for `/readyz`).
    pub fn check_ready(&self) -> Result<(), StoreError> {
        match self {
            AnyStore::Sqlite(store) => store.check_ready(),
            AnyStore::Postgres(store) => store.check_ready(),
        }
    }

    /// Starts the threads that run this store's work in bursts ([`Executor`]), woken through
    /// `wake`. On SQLite, where the work is done in this process, a few threads serving it
    /// one after another beat one thread per call (in WAL mode a read never waits for a
    /// writer, a hot database's pages are in memory, and every write goes through the one
    /// writer connection anyway): readers and the writer. On PostgreSQL, readers
    /// ([`Executor::start_readers`]): a read is one short round trip, and a few threads taking
    /// the reads queued at once cost fewer hand-offs than a thread per read; and writers, one
    /// for every [`POSTGRES_WRITE_BURST`] of the pool's connections, each running the writes
    /// it takes at once in one transaction ([`Executor::with_postgres_writers`]).
    /// `Some` on both backends today; `None` would mean the store has no threads to offer.
    pub fn executor(&self, wake: Wake) -> std::io::Result<Option<Executor>> {
        match self {
            AnyStore::Sqlite(store) => Executor::start(store, wake).map(Some),
            AnyStore::Postgres(store) => {
                let writers = (store.connections() / POSTGRES_WRITE_BURST).max(1);
                Executor::start_readers(
                    self,
                    std::sync::Arc::clone(&wake),
                    POSTGRES_READERS,
                    POSTGRES_READ_BURST,
                )?
                .with_postgres_writers(store, wake, writers, POSTGRES_WRITE_BURST)
                .map(Some)
            }
        }
    }

    /// Bytes free on the disk of a SQLite database file; `None` on PostgreSQL, whose disk is
    /// the server's to watch.
    pub fn disk_free_bytes(&self) -> Option<u64> {
        match self {
            AnyStore::Sqlite(store) => store.disk_free_bytes(),
            AnyStore::Postgres(_) => None,
        }
    }

    /// Connections open and idle (for metrics).
    pub fn pool_state(&self) -> PoolState {
        match self {
            AnyStore::Sqlite(store) => store.pool_state(),
            AnyStore::Postgres(store) => store.pool_state(),
        }
    }

    /// Writes run and commits made (for metrics).
    pub fn writer_stats(&self) -> WriterStats {
        match self {
            AnyStore::Sqlite(store) => store.writer_stats(),
            AnyStore::Postgres(store) => store.writer_stats(),
        }
    }
}

impl Store for AnyStore {
    fn read<T>(&self, work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>) -> RepoResult<T> {
        match self {
            AnyStore::Sqlite(store) => store.read(work),
            AnyStore::Postgres(store) => store.read(work),
        }
    }

    fn write<T>(&self, work: impl FnMut(&mut dyn Transaction) -> RepoResult<T>) -> RepoResult<T> {
        match self {
            AnyStore::Sqlite(store) => store.write(work),
            AnyStore::Postgres(store) => store.write(work),
        }
    }

    fn read_one<T>(&self, work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>) -> RepoResult<T> {
        match self {
            AnyStore::Sqlite(store) => store.read_one(work),
            AnyStore::Postgres(store) => store.read_one(work),
        }
    }
}

/// Creates (a SQLite file) and migrates the database of `config`, without opening a store.
/// Returns the versions applied.
pub fn migrate(config: &StoreConfig) -> Result<Vec<String>, StoreError> {
    match config.database {
        Database::Sqlite(_) => migrate_sqlite(config),
        Database::Postgres(_) => migrate_postgres(config),
    }
}

/// The store one piece of work runs on: a [`Store`] whose calls go where the work was sent.
/// The [`Executor`] hands one to each job over the burst it runs in (reads sharing one read
/// transaction, writes sharing one turn of the writer); [`JobStore::direct`] gives every call a
/// transaction of its own, for work run anywhere else.
#[derive(Clone, Copy)]
pub struct JobStore<'a>(Lane<'a>);

#[derive(Clone, Copy)]
enum Lane<'a> {
    Direct(&'a AnyStore),
    Reads(&'a ReadBurst<'a>),
    Writes(&'a WriteBurst<'a>),
    PostgresWrites(&'a PgWriteBurst<'a>),
}

impl<'a> JobStore<'a> {
    /// `store` itself: each read and write in a transaction of its own.
    pub fn direct(store: &'a AnyStore) -> Self {
        Self(Lane::Direct(store))
    }

    pub(crate) fn reads(burst: &'a ReadBurst<'a>) -> Self {
        Self(Lane::Reads(burst))
    }

    pub(crate) fn writes(burst: &'a WriteBurst<'a>) -> Self {
        Self(Lane::Writes(burst))
    }

    pub(crate) fn postgres_writes(burst: &'a PgWriteBurst<'a>) -> Self {
        Self(Lane::PostgresWrites(burst))
    }

    /// The burst of writes this store is over, if it is one (for tests that reach under it).
    #[cfg(test)]
    pub(crate) fn burst_of_writes(self) -> Option<&'a WriteBurst<'a>> {
        match self.0 {
            Lane::Writes(burst) => Some(burst),
            _ => None,
        }
    }
}

impl std::fmt::Debug for JobStore<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            Lane::Direct(_) => "JobStore::Direct",
            Lane::Reads(_) => "JobStore::Reads",
            Lane::Writes(_) => "JobStore::Writes",
            Lane::PostgresWrites(_) => "JobStore::PostgresWrites",
        })
    }
}

impl Store for JobStore<'_> {
    fn read<T>(&self, work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>) -> RepoResult<T> {
        match self.0 {
            Lane::Direct(store) => store.read(work),
            Lane::Reads(burst) => burst.read(work),
            Lane::Writes(burst) => burst.read(work),
            Lane::PostgresWrites(burst) => burst.read(work),
        }
    }

    fn write<T>(&self, work: impl FnMut(&mut dyn Transaction) -> RepoResult<T>) -> RepoResult<T> {
        match self.0 {
            Lane::Direct(store) => store.write(work),
            // A write in a burst of reads takes a turn of its own, as from any thread.
            Lane::Reads(burst) => burst.store().write(work),
            Lane::Writes(burst) => burst.write(work),
            Lane::PostgresWrites(burst) => burst.write(work),
        }
    }

    fn read_one<T>(&self, work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>) -> RepoResult<T> {
        match self.0 {
            Lane::Direct(store) => store.read_one(work),
            // A burst's reads share its transaction already.
            Lane::Reads(burst) => burst.read(work),
            Lane::Writes(burst) => burst.read(work),
            Lane::PostgresWrites(burst) => burst.read_one(work),
        }
    }
}

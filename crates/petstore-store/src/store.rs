//! The store a deployment opens: SQLite or PostgreSQL, chosen by the `--database` it is given,
//! behind one type so that the same binary serves from either.

use petstore_core::{DomainError, RepoResult, Snapshot, Store, Transaction};

use crate::config::{Database, StoreConfig};
use crate::error::StoreError;
use crate::postgres::{PgStore, migrate_postgres};
use crate::sqlite::{PoolState, SqliteStore, WriterStats, migrate_sqlite};

/// A [`Store`] on the database of a [`StoreConfig`]: whichever backend it names.
#[derive(Debug, Clone)]
pub enum AnyStore {
    /// A SQLite file.
    Sqlite(SqliteStore),
    /// A PostgreSQL database.
    Postgres(PgStore),
}

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

    /// Whether the database's work is done in this process, so that a few threads can serve
    /// it one after another: on SQLite, yes (in WAL mode a read never waits for a writer, a
    /// hot database's pages are in memory, and every write goes through the one writer
    /// connection anyway); on PostgreSQL, no (every statement is a round trip over the
    /// network, and many may be in flight at once).
    pub fn works_in_process(&self) -> bool {
        matches!(self, AnyStore::Sqlite(_))
    }

    /// Runs `reads` so that the reads it makes on this thread share one read transaction,
    /// on SQLite (see [`SqliteStore::sharing_reads`]); on PostgreSQL, just runs it.
    pub fn sharing_reads<T>(&self, reads: impl FnOnce() -> T) -> T {
        match self {
            AnyStore::Sqlite(store) => store.sharing_reads(reads),
            AnyStore::Postgres(_) => reads(),
        }
    }

    /// Runs `writes` so that the writes it makes on this thread share one transaction and one
    /// commit after the last of them, on SQLite (see [`SqliteStore::sharing_writes`], and
    /// its warning: each write returns before that commit, whose result this is); on
    /// PostgreSQL, just runs it (each write commits before it returns) and answers `Ok`.
    pub fn sharing_writes(&self, writes: impl FnOnce()) -> Result<(), DomainError> {
        match self {
            AnyStore::Sqlite(store) => store.sharing_writes(writes),
            AnyStore::Postgres(_) => {
                writes();
                Ok(())
            }
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
}

/// Creates (a SQLite file) and migrates the database of `config`, without opening a store.
/// Returns the versions applied.
pub fn migrate(config: &StoreConfig) -> Result<Vec<String>, StoreError> {
    match config.database {
        Database::Sqlite(_) => migrate_sqlite(config),
        Database::Postgres(_) => migrate_postgres(config),
    }
}

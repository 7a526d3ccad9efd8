//! The store a deployment opens: SQLite or PostgreSQL, chosen by the `--database` it is given,
//! behind one type so that the same binary serves from either.

use petstore_core::{Currency, RepoResult, Snapshot, Store, Transaction};

use crate::config::{Database, StoreConfig};
use crate::error::StoreError;
use crate::freshness::Position;
use crate::job::Bursts;
use crate::ownership::Found;
use crate::postgres::{PgStore, inspect_postgres, migrate_postgres};
use crate::sqlite::{SqliteStore, inspect_sqlite, migrate_sqlite};
use crate::stats::{PoolState, ServerReads, WriterStats};
use crate::upgrade;

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

    /// The threads its backend runs work on, and how a burst of it runs (the executor's
    /// business: `executor.rs`).
    pub(crate) fn bursts(&self) -> Bursts {
        match self {
            AnyStore::Sqlite(store) => store.bursts(),
            AnyStore::Postgres(store) => store.bursts(),
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

    /// The currency the shop prices in: the one stored, or `wanted` stored now if none is
    /// (the first start). A start naming another is refused ([`StoreError::CurrencyChanged`]),
    /// changing nothing. Give what it returns to the service's
    /// [`Settings`](petstore_core::Settings).
    pub fn shop_currency(&self, wanted: Currency) -> Result<Currency, StoreError> {
        match self {
            AnyStore::Sqlite(store) => store.shop_currency(wanted),
            AnyStore::Postgres(store) => store.shop_currency(wanted),
        }
    }

    /// Says `node` serves (`alive`), with the migrations this version knows, or that it
    /// stopped: what `petstore migrate --finish` reads to see older nodes.
    pub fn heartbeat(&self, node: &str, alive: bool) -> Result<(), StoreError> {
        match self {
            AnyStore::Sqlite(store) => store.heartbeat(node, alive),
            AnyStore::Postgres(store) => store.heartbeat(node, alive),
        }
    }

    /// Leaves the database complete by itself for a clean stop: a SQLite file with its WAL
    /// emptied into it ([`SqliteStore::settle`]); nothing to do on PostgreSQL, whose server
    /// keeps its own files. Whether the database is now complete by itself.
    pub fn settle(&self) -> Result<bool, StoreError> {
        match self {
            AnyStore::Sqlite(store) => store.settle(),
            AnyStore::Postgres(_) => Ok(true),
        }
    }

    /// The consistency token of the writes this node has answered so far: a PostgreSQL
    /// position at or past each of their commits, with read standbys; `None` otherwise (one
    /// database, never behind) and while a commit's position is unknown.
    pub fn commit_position(&self) -> Option<Position> {
        match self {
            AnyStore::Sqlite(_) => None,
            AnyStore::Postgres(store) => store.commit_position(),
        }
    }

    /// What each server served of the reads, with read standbys; empty without them.
    pub fn server_reads(&self) -> Vec<ServerReads> {
        match self {
            AnyStore::Sqlite(_) => Vec::new(),
            AnyStore::Postgres(store) => store.server_reads(),
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

/// Looks at the database of `config` without changing anything, and says whether it is new
/// or this service's; another program's database, or one a newer version migrated, is an
/// error that says what was found and what to do.
pub fn inspect(config: &StoreConfig) -> Result<Found, StoreError> {
    match config.database {
        Database::Sqlite(_) => inspect_sqlite(config),
        Database::Postgres(_) => inspect_postgres(config),
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

/// `petstore migrate --finish --dry-run`: what [`finish_upgrade`] would run now, and the nodes
/// it would wait for, changing nothing. Refuses what it refuses (a database this version
/// has not migrated yet, or none at all).
pub fn finish_plan(config: &StoreConfig) -> Result<upgrade::FinishPlan, StoreError> {
    ready_to_finish(config)?;
    match config.database {
        Database::Sqlite(_) => {
            let mut conn = crate::sqlite::connect(config)?;
            upgrade::plan_sqlite(&mut conn, &crate::sqlite::MIGRATIONS)
        }
        Database::Postgres(_) => {
            let mut conn = crate::postgres::connect_postgres(config)?;
            upgrade::plan_postgres(&mut conn, &crate::postgres::PG_MIGRATIONS)
        }
    }
}

/// Refuses a finish (or its plan) on a database that lacks one of this version's additive
/// migrations, that is not there, or that a newer version is being upgraded to (its finish is
/// that version's to run).
fn ready_to_finish(config: &StoreConfig) -> Result<(), StoreError> {
    crate::ownership::finishable(inspect(config)?, &config.database)
}

/// `petstore migrate --finish`: runs the migrations that finish this version's upgrade
/// ([`crate::upgrade`]), once every node is of this version. Refuses, changing nothing, a
/// database that still lacks one of this version's additive migrations, and one where a node
/// that knows fewer migrations was seen in the last 30 s, unless `force`. The versions applied.
pub fn finish_upgrade(config: &StoreConfig, force: bool) -> Result<Vec<String>, StoreError> {
    ready_to_finish(config)?;
    match config.database {
        Database::Sqlite(_) => {
            let mut conn = crate::sqlite::connect(config)?;
            upgrade::finish_sqlite(&mut conn, &crate::sqlite::MIGRATIONS, force)
        }
        Database::Postgres(_) => {
            let mut conn = crate::postgres::connect_postgres(config)?;
            crate::postgres::with_migration_lock(&mut conn, |conn| {
                upgrade::finish_postgres(conn, &crate::postgres::PG_MIGRATIONS, force)
            })?
        }
    }
}

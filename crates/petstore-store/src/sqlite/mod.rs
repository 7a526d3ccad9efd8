//! The SQLite store: connection pools and the unit of work (opening the file: `setup.rs`).
//!
//! Writer strategy: one writer connection with group commit (`writer.rs`).
//! SQLite allows one writer at a time anyway; with a single connection, writers queue (bounded
//! by `connection_timeout`) instead of spinning on `SQLITE_BUSY`, and write transactions begin
//! `IMMEDIATE`, taking the write lock before their first read, so a rule checked inside one
//! still holds at commit, even against another process (the `petstore keys` command) writing to
//! the same file. Writes that queue up while one runs share its transaction (each in its own
//! savepoint) and one durable commit. Readers have their own pool and, in WAL mode, never wait
//! for the writer.

use std::sync::Arc;

use diesel::RunQueryDsl;
use diesel::r2d2::{ConnectionManager, Pool};
use diesel::sqlite::SqliteConnection;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};
use petstore_core::{Currency, DomainError, RepoResult, Snapshot, Store, Transaction};

use crate::config::StoreConfig;

pub(crate) mod burst;
mod ledger_begun;
mod limit;
mod prepared;
mod setup;
mod tx;

mod snapshot;
pub(crate) mod writer;

use crate::error::StoreError;
use crate::ownership;
use crate::stats::{PoolState, WriterStats};
use ledger_begun::LedgerBegun;
use setup::{Pragmas, database_url, read_only_uri};
pub(crate) use setup::{Untouched, connect_unchanged, inspect_sqlite};
pub use setup::{connect, migrate_sqlite};
use tx::SqliteTx;
use writer::GroupWriter;

/// The SQLite migrations in `migrations/sqlite/`, compiled into the binary.
pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");

type SqlitePool = Pool<ConnectionManager<SqliteConnection>>;

/// The pet store's [`Store`] on a SQLite file.
#[derive(Clone)]
pub struct SqliteStore {
    writer: Arc<GroupWriter>,
    readers: SqlitePool,
    file: Arc<DatabaseFile>,
    ledger: LedgerBegun,
}

/// The database file as it was when the store opened it. A file deleted or replaced under a
/// running store would take its writes into an inode nobody will open again: they would be
/// acknowledged and lost at the next start. Writes and readiness check it first.
#[derive(Debug)]
struct DatabaseFile {
    path: std::path::PathBuf,
    identity: Option<(u64, u64)>,
}

impl DatabaseFile {
    fn of(path: &std::path::Path) -> Self {
        Self {
            path: path.to_owned(),
            identity: file_identity(path),
        }
    }

    /// `Ok` while the path still names the file the store opened.
    fn check(&self) -> Result<(), StoreError> {
        if file_identity(&self.path) == self.identity {
            Ok(())
        } else {
            Err(StoreError::FileGone(format!(
                "{} was removed or replaced while the service ran; restart it to use the file there now",
                self.path.display()
            )))
        }
    }
}

/// Less room than this on the database's disk, and the store is not ready: a batch of writes,
/// a checkpoint or the log's growth may not fit, though a single small write still might.
pub const MIN_FREE_BYTES: u64 = 1 << 20;

impl DatabaseFile {
    /// `Ok` while the disk that holds the file has [`MIN_FREE_BYTES`] available (to the
    /// service's user: blocks reserved for root do not count).
    /// Bytes free for unprivileged writers on the disk that holds the file.
    fn free_bytes(&self) -> Result<u64, StoreError> {
        let folder = self.path.parent().filter(|p| !p.as_os_str().is_empty());
        let stats = rustix::fs::statvfs(folder.unwrap_or(std::path::Path::new(".")))
            .map_err(|e| StoreError::NoRoom(format!("cannot read the free space: {e}")))?;
        Ok(stats.f_bavail.saturating_mul(stats.f_frsize))
    }

    fn check_room(&self) -> Result<(), StoreError> {
        let free = self.free_bytes()?;
        if free < MIN_FREE_BYTES {
            return Err(StoreError::NoRoom(format!(
                "the disk that holds {} has {free} bytes free; writes need at least {MIN_FREE_BYTES}",
                self.path.display()
            )));
        }
        Ok(())
    }
}

/// The device and inode of the file at `path` (Unix).
fn file_identity(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("writer", &self.writer.stats())
            .field("readers", &self.readers.state())
            .finish()
    }
}

impl SqliteStore {
    /// Opens (creating and migrating if needed) the database of `config`; with
    /// `config.read_only`, opens it as it is, read-only, if it is this service's at this
    /// version.
    pub fn open(config: &StoreConfig) -> Result<Self, StoreError> {
        if config.read_only {
            ownership::readable(inspect_sqlite(config)?, &config.database)?;
        } else {
            migrate_sqlite(config)?;
        }
        let path = database_url(config)?;
        let uri = if config.read_only {
            read_only_uri(path)
        } else {
            path.to_owned()
        };
        let url = uri.as_str();
        let pragmas = Pragmas::of(config);
        let pool = |size: u32| {
            Pool::builder()
                .max_size(size)
                .min_idle(Some(1))
                // A connection to a file in this process cannot be dropped by a peer, so the
                // `SELECT 1` r2d2 would run on every checkout tests nothing.
                .test_on_check_out(false)
                .connection_timeout(config.connection_timeout)
                .connection_customizer(Box::new(pragmas))
                .build(ConnectionManager::<SqliteConnection>::new(url))
        };
        Ok(Self {
            writer: Arc::new(GroupWriter::new(connect(config)?, config)),
            readers: pool(config.readers.max(1))?,
            file: Arc::new(DatabaseFile::of(std::path::Path::new(path))),
            ledger: LedgerBegun::default(),
        })
    }

    /// Whether the database answers, has every migration applied and takes writes (for
    /// `/readyz`). Takes writes: its disk has [`MIN_FREE_BYTES`] free, and a probe write has
    /// committed since the start and since the last write that failed for the disk's sake
    /// (full, read-only, failing), or commits now.
    pub fn check_ready(&self) -> Result<(), StoreError> {
        self.file.check()?;
        self.file.check_room()?;
        let mut conn = self.readers.get()?;
        diesel::sql_query("SELECT 1").execute(&mut *conn)?;
        let pending = conn
            .has_pending_migration(crate::upgrade::Additive(&MIGRATIONS))
            .map_err(|e| StoreError::Migration(e.to_string()))?;
        if pending {
            return Err(StoreError::Migration("migrations are pending".into()));
        }
        drop(conn);
        self.writer.probe()?;
        Ok(())
    }

    /// Connections open and idle, writer and readers (for metrics).
    pub fn pool_state(&self) -> PoolState {
        let readers = self.readers.state();
        PoolState {
            connections: 1 + readers.connections,
            idle: u32::from(self.writer.is_idle()) + readers.idle_connections,
        }
    }

    /// Bytes free on the disk that holds the database file (for metrics), if it can be read.
    pub fn disk_free_bytes(&self) -> Option<u64> {
        self.file.free_bytes().ok()
    }

    /// Writers waiting for the writer connection now.
    pub fn writers_waiting(&self) -> usize {
        self.writer.waiting()
    }

    /// Writes run and commits made: fewer commits than writes means writes were grouped.
    pub fn writer_stats(&self) -> WriterStats {
        self.writer.stats()
    }

    /// The currency the shop prices in: the one stored, or `wanted` stored now if none is
    /// (the first start); refused if another is stored ([`crate::shop`]).
    pub fn shop_currency(&self, wanted: Currency) -> Result<Currency, StoreError> {
        crate::shop::settle_currency!(&mut *self.readers.get()?, wanted)
    }

    /// Says `node` serves (`alive`), with the migrations it knows, or that it stopped
    /// ([`crate::upgrade`]).
    pub fn heartbeat(&self, node: &str, alive: bool) -> Result<(), StoreError> {
        crate::upgrade::heartbeat_sqlite(&mut *self.readers.get()?, &MIGRATIONS, node, alive)
    }

    /// Moves every committed write from the WAL into the database file and empties the WAL,
    /// for a clean stop: people copy a stopped service's file and nothing else, and SQLite
    /// leaves the WAL in place while any connection of the process is open. Waits (up to the
    /// busy time-out) for a write under way to finish; whether the WAL could be emptied.
    pub fn settle(&self) -> Result<bool, StoreError> {
        #[derive(diesel::QueryableByName)]
        struct Checkpoint {
            #[diesel(sql_type = diesel::sql_types::Integer)]
            busy: i32,
        }
        let mut conn = self.readers.get()?;
        let checkpoint: Checkpoint =
            diesel::sql_query("PRAGMA wal_checkpoint(TRUNCATE)").get_result(&mut *conn)?;
        Ok(checkpoint.busy == 0)
    }
}

impl SqliteStore {
    /// A turn of the writer ([`writer::Turn`]) by `deadline`, once the file is checked to be
    /// the one opened.
    pub(crate) fn turn_by(
        &self,
        deadline: std::time::Instant,
    ) -> Result<writer::Turn, DomainError> {
        self.file.check()?;
        self.writer.turn_by(deadline)
    }

    /// How long a write may wait for the writer, in all: the connection time-out.
    pub(crate) fn write_wait(&self) -> std::time::Duration {
        self.writer.wait()
    }
}

impl Store for SqliteStore {
    fn read<T>(&self, work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>) -> RepoResult<T> {
        let mut conn = self.readers.get().map_err(StoreError::from)?;
        // One deferred transaction: all the work's queries see the same snapshot.
        snapshot::in_read_transaction::<T, StoreError>(&mut conn, |conn| {
            work(&mut SqliteTx::new(conn, &self.ledger)).map_err(StoreError::Domain)
        })
        .map_err(DomainError::from)
    }

    /// A turn of its own: the write joins the open batch (or begins one) and returns once
    /// that batch has committed.
    fn write<T>(
        &self,
        mut work: impl FnMut(&mut dyn Transaction) -> RepoResult<T>,
    ) -> RepoResult<T> {
        self.file.check().map_err(DomainError::from)?;
        self.writer
            .run(|conn| SqliteTx::write(conn, &self.ledger, &mut work))
    }
}

#[cfg(test)]
mod tests {
    use diesel::dsl::sql;
    use diesel::sql_types::BigInt;

    use super::*;
    use crate::config::Durability;

    fn pragma(conn: &mut SqliteConnection, name: &str) -> i64 {
        diesel::select(sql::<BigInt>(&format!("(SELECT * FROM pragma_{name})")))
            .get_result(conn)
            .unwrap()
    }

    /// `.cargo/config.toml` builds SQLite without a mutex per call and without memory
    /// statistics (docs/performance.md): a build that lost those flags fails here.
    #[test]
    fn sqlite_is_built_multi_threaded_without_memory_statistics() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&StoreConfig::new(dir.path().join("options.db"))).unwrap();
        let mut conn = store.readers.get().unwrap();
        let options: String = diesel::select(sql::<diesel::sql_types::Text>(
            "(SELECT group_concat(compile_options, ' ') FROM pragma_compile_options)",
        ))
        .get_result(&mut *conn)
        .unwrap();
        let options: Vec<&str> = options.split(' ').collect();
        assert!(options.contains(&"THREADSAFE=2"), "{options:?}");
        assert!(options.contains(&"DEFAULT_MEMSTATUS=0"), "{options:?}");
    }

    #[test]
    fn every_pooled_connection_carries_the_pragmas() {
        let dir = tempfile::tempdir().unwrap();
        for (durability, synchronous) in [(Durability::Full, 2), (Durability::Normal, 1)] {
            let mut config = StoreConfig::new(dir.path().join(format!("{durability:?}.db")));
            config.durability = durability;
            config.busy_timeout = std::time::Duration::from_millis(1234);
            let store = SqliteStore::open(&config).unwrap();
            let mut reader = store.readers.get().unwrap();
            let mut writer = connect(&config).unwrap();
            for conn in [&mut *reader, &mut writer] {
                assert_eq!(pragma(conn, "foreign_keys"), 1);
                assert_eq!(pragma(conn, "synchronous"), synchronous);
                assert_eq!(pragma(conn, "busy_timeout"), 1234);
            }
        }
    }
}

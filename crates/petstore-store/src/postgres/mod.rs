//! The PostgreSQL store: one pool of connections that reads and writes share, migrations run
//! under an advisory lock, and write transactions run again when they conflict.
//!
//! Isolation: reads run in one `REPEATABLE READ READ ONLY` transaction, so every query of a
//! use case sees the same snapshot. Writes run at `READ COMMITTED` and lock the rows their
//! rules depend on (see `repositories/mod.rs`): no serialization failures in normal
//! operation, and two orders for the last unit take turns on the pet's row instead of both
//! succeeding. A deadlock or serialization failure that still happens is retried here, on a
//! fresh transaction, a few times before it is reported as `unavailable`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::pg::PgConnection;
use diesel::r2d2::{ConnectionManager, Pool};
use diesel::{Connection, RunQueryDsl};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};
use petstore_core::{DomainError, Failure, RepoResult, Snapshot, Store, Transaction};

use crate::config::{Database, StoreConfig};
use crate::error::{StoreError, is_conflict, is_connection_lost};
use crate::sqlite::{PoolState, WriterStats};
use tx::PgTx;

mod tx;

/// The PostgreSQL migrations in `migrations/postgres/`, compiled into the binary.
pub const PG_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");

/// The session-level advisory lock migrations run under, so that nodes starting together
/// migrate one at a time.
const MIGRATION_LOCK: i64 = 0x7065_7473_746f_7265;

/// How many times a conflicting write runs again before it is reported as unavailable.
const CONFLICT_RETRIES: u32 = 5;

type PgPool = Pool<ConnectionManager<PgConnection>>;

/// The pet store's [`Store`] on a PostgreSQL database.
#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
    counts: Arc<Counts>,
}

/// Writes run and committed, for metrics.
#[derive(Debug, Default)]
struct Counts {
    writes: AtomicU64,
    commits: AtomicU64,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("pool", &self.pool.state())
            .finish()
    }
}

fn postgres_url(config: &StoreConfig) -> Result<&str, StoreError> {
    match &config.database {
        Database::Postgres(url) => Ok(url),
        Database::Sqlite(_) => Err(StoreError::Config(format!(
            "{} is not a PostgreSQL database",
            config.database
        ))),
    }
}

/// One connection, outside any pool. A failure names the database (without its password).
pub fn connect_postgres(config: &StoreConfig) -> Result<PgConnection, StoreError> {
    PgConnection::establish(postgres_url(config)?).map_err(|cause| StoreError::Unreachable {
        database: config.database.to_string(),
        cause: cause.to_string().trim().to_owned(),
    })
}

/// Applies pending migrations, one node at a time. Returns the versions applied.
pub fn migrate_postgres(config: &StoreConfig) -> Result<Vec<String>, StoreError> {
    let mut conn = connect_postgres(config)?;
    conn.batch_execute(&format!("SELECT pg_advisory_lock({MIGRATION_LOCK})"))?;
    let applied = conn
        .run_pending_migrations(PG_MIGRATIONS)
        .map(|versions| versions.iter().map(ToString::to_string).collect())
        .map_err(|e| StoreError::Migration(e.to_string()));
    // Closing the connection would release it too; unlocking keeps the session reusable.
    conn.batch_execute(&format!("SELECT pg_advisory_unlock({MIGRATION_LOCK})"))?;
    applied
}

impl PgStore {
    /// Opens the database of `config`, applying pending migrations first.
    pub fn open(config: &StoreConfig) -> Result<Self, StoreError> {
        migrate_postgres(config)?;
        let pool = Pool::builder()
            .max_size(config.readers.max(2))
            .min_idle(Some(1))
            .connection_timeout(config.connection_timeout)
            .build(ConnectionManager::<PgConnection>::new(postgres_url(
                config,
            )?))
            .map_err(|cause| StoreError::Unreachable {
                database: config.database.to_string(),
                cause: cause.to_string(),
            })?;
        Ok(Self {
            pool,
            counts: Arc::default(),
        })
    }

    /// Whether the database answers and has every migration applied (for `/readyz`).
    pub fn check_ready(&self) -> Result<(), StoreError> {
        let mut conn = self.pool.get()?;
        diesel::sql_query("SELECT 1").execute(&mut *conn)?;
        let pending = conn
            .has_pending_migration(PG_MIGRATIONS)
            .map_err(|e| StoreError::Migration(e.to_string()))?;
        if pending {
            return Err(StoreError::Migration("migrations are pending".into()));
        }
        Ok(())
    }

    /// Writes run and commits made (one each: each write is its own transaction).
    pub fn writer_stats(&self) -> WriterStats {
        WriterStats {
            writes: self.counts.writes.load(Ordering::Relaxed),
            commits: self.counts.commits.load(Ordering::Relaxed),
        }
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
    fn read<T>(&self, work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>) -> RepoResult<T> {
        let mut conn = self.pool.get().map_err(StoreError::from)?;
        conn.build_transaction()
            .repeatable_read()
            .read_only()
            .run::<T, StoreError, _>(|conn| {
                work(&mut PgTx {
                    conn,
                    writing: false,
                })
                .map_err(StoreError::Domain)
            })
            .map_err(DomainError::from)
    }

    fn write<T>(
        &self,
        mut work: impl FnMut(&mut dyn Transaction) -> RepoResult<T>,
    ) -> RepoResult<T> {
        self.counts.writes.fetch_add(1, Ordering::Relaxed);
        let mut conflicts = 0;
        loop {
            let mut conn = self.pool.get().map_err(StoreError::from)?;
            let mut committing = false;
            let outcome = conn
                .build_transaction()
                .read_committed()
                .run::<T, StoreError, _>(|conn| {
                    let done = work(&mut PgTx {
                        conn,
                        writing: true,
                    })
                    .map_err(StoreError::Domain)?;
                    committing = true;
                    Ok(done)
                })
                .map_err(|error| {
                    // The server may have committed before the connection broke: a write
                    // answered as failed could then be made twice by its client's retry.
                    if committing && is_connection_lost(&error) {
                        DomainError::OutcomeUnknown(Failure::caused_by(error))
                    } else {
                        DomainError::from(error)
                    }
                });
            match outcome {
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

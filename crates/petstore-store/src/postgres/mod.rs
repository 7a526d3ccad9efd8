//! The PostgreSQL store: one pool of connections that reads and writes share, migrations run
//! under an advisory lock, and write transactions run again when they conflict.
//!
//! Isolation: reads run in one `REPEATABLE READ READ ONLY` transaction, so every query of a
//! use case sees the same snapshot. Writes run at `READ COMMITTED` and lock the rows their
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
use diesel::dsl::sql;
use diesel::pg::PgConnection;
use diesel::r2d2::{ConnectionManager, Pool};
use diesel::sql_types::{BigInt, Nullable, Text};
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

type PgPool = Pool<PrimaryOnly>;

/// The pool's connections, kept to a server that takes writes. A multi-host URL with
/// `target_session_attrs=read-write` lets libpq find the primary when it connects; this check
/// (r2d2 runs it each time a connection is lent, in place of `SELECT 1`) drops a connection
/// whose server has since become read-only (an old primary come back as a standby), so that
/// the pool connects again, to whichever server is the primary now.
///
/// Each connection gets its server-side bounds when made: `statement_timeout` (a statement
/// stuck on a lock is cancelled, not left holding others'), and
/// `idle_in_transaction_session_timeout` (a node that died inside a transaction does not
/// keep its row locks until TCP notices).
#[derive(Debug)]
struct PrimaryOnly {
    manager: ConnectionManager<PgConnection>,
    statement_timeout: Duration,
}

impl diesel::r2d2::ManageConnection for PrimaryOnly {
    type Connection = PgConnection;
    type Error = diesel::r2d2::Error;

    fn connect(&self) -> Result<PgConnection, Self::Error> {
        let mut conn = self.manager.connect()?;
        conn.batch_execute(&format!(
            "SET statement_timeout = {}; SET idle_in_transaction_session_timeout = 30000",
            self.statement_timeout.as_millis().max(1)
        ))
        .map_err(diesel::r2d2::Error::QueryError)?;
        Ok(conn)
    }

    fn is_valid(&self, conn: &mut PgConnection) -> Result<(), Self::Error> {
        let read_only = diesel::select(sql::<diesel::sql_types::Bool>(
            "pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on'",
        ))
        .get_result::<bool>(conn)
        .map_err(diesel::r2d2::Error::QueryError)?;
        if read_only {
            return Err(diesel::r2d2::Error::QueryError(
                diesel::result::Error::DatabaseError(
                    diesel::result::DatabaseErrorKind::ReadOnlyTransaction,
                    Box::new("the server no longer takes writes".to_owned()),
                ),
            ));
        }
        Ok(())
    }

    fn has_broken(&self, conn: &mut PgConnection) -> bool {
        self.manager.has_broken(conn)
    }
}

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

/// The URL libpq connects with: the configured one, with bounds on what the network may
/// cost where the URL sets none. A connection attempt gives up after `connect_timeout` (a
/// server that accepts and never answers would otherwise hold it for good), and the kernel
/// probes an idle connection (`keepalives_*`) and drops one whose sent data stays
/// unacknowledged (`tcp_user_timeout`): a dead server behind a lost route is noticed in
/// seconds, not after TCP's two hours.
fn postgres_url(config: &StoreConfig) -> Result<String, StoreError> {
    let Database::Postgres(url) = &config.database else {
        return Err(StoreError::Config(format!(
            "{} is not a PostgreSQL database",
            config.database
        )));
    };
    // OpenSSL, first used by libpq for TLS, would otherwise register a clean-up to run at
    // exit, which frees what the pool's threads may still be using: a process ending with
    // connections open then crashed now and then (SIGSEGV). Initialised here first, before
    // any connection, it registers none.
    openssl_sys::init();
    let connect_secs = config.connection_timeout.as_secs().clamp(2, 30);
    let defaults = [
        ("connect_timeout", connect_secs.to_string()),
        ("keepalives_idle", "10".to_owned()),
        ("keepalives_interval", "5".to_owned()),
        ("keepalives_count", "3".to_owned()),
        ("tcp_user_timeout", "10000".to_owned()),
    ];
    let query = url.split_once('?').map_or("", |(_, query)| query);
    let given = |name: &str| {
        query
            .split('&')
            .any(|pair| pair.split_once('=').map_or(pair, |(key, _)| key) == name)
    };
    let mut bounded = url.clone();
    for (name, value) in defaults {
        if !given(name) {
            bounded.push(if bounded.contains('?') { '&' } else { '?' });
            bounded.push_str(&format!("{name}={value}"));
        }
    }
    Ok(bounded)
}

/// One connection, outside any pool. A failure names the database (without its password),
/// and says when TLS is what failed.
pub fn connect_postgres(config: &StoreConfig) -> Result<PgConnection, StoreError> {
    PgConnection::establish(&postgres_url(config)?).map_err(|cause| StoreError::Unreachable {
        database: config.database.to_string(),
        cause: explain_tls(cause.to_string().trim()),
    })
}

/// libpq's words for a failed TLS handshake, with what to check: libpq says "SSL", and names
/// the host it tried.
fn explain_tls(cause: &str) -> String {
    if cause.contains("SSL") || cause.contains("certificate") {
        format!(
            "TLS to the server failed (check sslmode, sslrootcert and the server's \
             certificate): {cause}"
        )
    } else {
        cause.to_owned()
    }
}

/// Applies pending migrations, one node at a time. Returns the versions applied.
pub fn migrate_postgres(config: &StoreConfig) -> Result<Vec<String>, StoreError> {
    let mut conn = connect_postgres(config)?;
    conn.batch_execute(&format!("SELECT pg_advisory_lock({MIGRATION_LOCK})"))?;
    let applied = conn
        .run_pending_migrations(PG_MIGRATIONS)
        .map(|versions| versions.iter().map(ToString::to_string).collect())
        .map_err(|e| StoreError::Migration(e.to_string()))
        .and_then(|applied| keep_event_ids_ahead(&mut conn).map(|()| applied));
    // Closing the connection would release it too; unlocking keeps the session reusable.
    conn.batch_execute(&format!("SELECT pg_advisory_unlock({MIGRATION_LOCK})"))?;
    applied
}

/// The largest id no new event can be given: the feed's base plus the id the next
/// transaction gets, times the events a transaction may write, less one. At or above every event there
/// is, unless transaction ids started again below the events (a dump restored into a new
/// cluster), which [`keep_event_ids_ahead`] mends.
pub(crate) fn event_id_position(conn: &mut PgConnection) -> Result<i64, StoreError> {
    Ok(diesel::select(sql::<BigInt>(
        "(SELECT base FROM event_feed) \
         + pg_snapshot_xmax(pg_current_snapshot())::text::bigint * 65536 - 1",
    ))
    .get_result(conn)?)
}

/// Moves the feed's base so that every event written from now on gets an id above
/// `position`. Only while no event is being written: [`keep_event_ids_ahead`] locks the
/// table for it; a copy runs it on a target nobody else writes yet.
pub(crate) fn move_event_ids_past(
    conn: &mut PgConnection,
    position: i64,
) -> Result<(), StoreError> {
    diesel::sql_query(
        "UPDATE event_feed SET base = GREATEST(base, \
         $1 + 1 - pg_snapshot_xmax(pg_current_snapshot())::text::bigint * 65536)",
    )
    .bind::<BigInt, _>(position)
    .execute(conn)?;
    Ok(())
}

/// Makes sure the next event's id is above every event's there is (run at start, after the
/// migrations). It only needs doing after the transaction ids of the server started again
/// below the events' (a logical dump restored into a new cluster): the base then moves, while
/// a lock keeps every other writer of events out.
fn keep_event_ids_ahead(conn: &mut PgConnection) -> Result<(), StoreError> {
    if event_id_position(conn)? >= largest_event_id(conn)? {
        return Ok(());
    }
    conn.transaction(|conn| {
        conn.batch_execute("LOCK TABLE events IN SHARE ROW EXCLUSIVE MODE")?;
        let largest = largest_event_id(conn)?;
        move_event_ids_past(conn, largest)
    })
}

fn largest_event_id(conn: &mut PgConnection) -> Result<i64, StoreError> {
    Ok(
        diesel::select(sql::<BigInt>("(SELECT COALESCE(MAX(id), 0) FROM events)"))
            .get_result(conn)?,
    )
}

impl PgStore {
    /// Opens the database of `config`, applying pending migrations first.
    pub fn open(config: &StoreConfig) -> Result<Self, StoreError> {
        migrate_postgres(config)?;
        let pool = Pool::builder()
            .max_size(config.readers.max(2))
            .min_idle(Some(1))
            .connection_timeout(config.connection_timeout)
            .build(PrimaryOnly {
                manager: ConnectionManager::new(postgres_url(config)?),
                statement_timeout: config.statement_timeout,
            })
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
                work(&mut PgTx::new(conn, false)).map_err(StoreError::Domain)
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
            match self.write_once(&mut conn, &mut work) {
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

impl PgStore {
    /// One transaction of `work`. Before its `COMMIT` it asks the server for its transaction
    /// id and timeline, so that if the connection breaks during the `COMMIT` (the server may have committed
    /// before the answer was lost), [`resolve`](Self::resolve) can ask another connection
    /// whether it did: the write is then answered as what happened, and `OutcomeUnknown` only
    /// when no connection can tell.
    fn write_once<T>(
        &self,
        conn: &mut PgConnection,
        work: &mut impl FnMut(&mut dyn Transaction) -> RepoResult<T>,
    ) -> RepoResult<T> {
        Manager::begin_transaction_sql(conn, "BEGIN ISOLATION LEVEL READ COMMITTED")
            .map_err(StoreError::from)?;
        let done = work(&mut PgTx::new(&mut *conn, true)).and_then(|value| {
            // The COMMIT itself is not bounded by `statement_timeout`: a cancelled wait for a
            // synchronous standby would leave the commit made here only, and answered as
            // made; the request's deadline answers such a wait `OutcomeUnknown` instead.
            let (xid, timeline, _) = diesel::select((
                sql::<BigInt>("pg_current_xact_id()::text::bigint"),
                sql::<BigInt>(TIMELINE),
                sql::<Text>("set_config('statement_timeout', '0', true)"),
            ))
            .get_result::<(i64, i64, String)>(conn)
            .map_err(StoreError::from)?;
            Ok((value, (xid, timeline)))
        });
        let (value, xid) = match done {
            Ok(done) => done,
            Err(error) => {
                let _ = Manager::rollback_transaction(conn);
                return Err(error);
            }
        };
        match Manager::commit_transaction(conn) {
            Ok(()) => Ok(value),
            Err(error) => {
                let error = StoreError::from(error);
                if !is_connection_lost(&error) {
                    return Err(error.into());
                }
                match self.resolve(xid) {
                    Some(true) => Ok(value),
                    Some(false) => Err(error.into()),
                    None => Err(DomainError::OutcomeUnknown(Failure::caused_by(error))),
                }
            }
        }
    }

    /// Whether the transaction `xid` of timeline `timeline` committed (`Some(true)`),
    /// aborted (`Some(false)`), or `None` when no connection could tell within
    /// [`RESOLVE_WITHIN`]. A transaction whose connection broke is still "in progress" until
    /// its server process notices: it is asked again until then.
    ///
    /// Only a server on the same timeline can say. After a failover the new primary (a new
    /// timeline) may never have received the transaction, not even its id, and give that id
    /// to one of its own: its status would then be another transaction's.
    fn resolve(&self, (xid, timeline): (i64, i64)) -> Option<bool> {
        let deadline = std::time::Instant::now() + RESOLVE_WITHIN;
        while std::time::Instant::now() < deadline {
            let status = self.pool.get().ok().and_then(|mut conn| {
                diesel::select((
                    sql::<Nullable<Text>>("pg_xact_status(")
                        .bind::<BigInt, _>(xid)
                        .sql("::text::xid8)"),
                    sql::<BigInt>(TIMELINE),
                ))
                .get_result::<(Option<String>, i64)>(&mut conn)
                .ok()
            });
            let status = match status {
                Some((_, now)) if now != timeline => return None,
                Some((status, _)) => status,
                None => None,
            };
            match status.as_deref() {
                Some("committed") => return Some(true),
                Some("aborted") => return Some(false),
                // In progress, too old to know (NULL), or no connection yet: ask again.
                _ => std::thread::sleep(Duration::from_millis(50)),
            }
        }
        None
    }
}

/// The server's timeline, which a promotion changes: the first eight hex digits of the name
/// of the WAL file being written.
const TIMELINE: &str =
    "('x' || substr(pg_walfile_name(pg_current_wal_insert_lsn()), 1, 8))::bit(32)::bigint";

/// How long a write whose `COMMIT` lost its connection waits to learn what became of it.
const RESOLVE_WITHIN: Duration = Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_network_is_bounded_unless_the_url_says_otherwise() {
        let config = StoreConfig::for_database(Database::parse(
            "postgres://shop@db:5432/shop?sslmode=verify-full&connect_timeout=9",
        ));
        let url = postgres_url(&config).unwrap();
        assert!(
            url.starts_with("postgres://shop@db:5432/shop?sslmode=verify-full&connect_timeout=9&")
        );
        assert_eq!(
            url.matches("connect_timeout=").count(),
            1,
            "the URL's own wins: {url}"
        );
        for bound in [
            "keepalives_idle=10",
            "keepalives_count=3",
            "tcp_user_timeout=10000",
        ] {
            assert!(url.contains(bound), "{url}");
        }
        let bare = StoreConfig::for_database(Database::parse("postgres://shop@db/shop"));
        let url = postgres_url(&bare).unwrap();
        assert!(
            url.starts_with("postgres://shop@db/shop?connect_timeout="),
            "{url}"
        );
    }
}

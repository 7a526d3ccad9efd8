//! The pool's connections to PostgreSQL: kept to a server that takes writes, each bounded on
//! the server (statement and idle-in-transaction time-outs) and on the network (the URL's
//! connection and keep-alive bounds), and knowing the timeline of the server it reached.

use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel::dsl::sql;
use diesel::pg::PgConnection;
use diesel::r2d2::{ConnectionManager, Pool};
use diesel::sql_types::BigInt;
use diesel::{Connection, QueryResult, RunQueryDsl};

use crate::config::{Database, StoreConfig};
use crate::error::StoreError;

pub(super) type PgPool = Pool<PrimaryOnly>;

/// The pool's connections, kept to a server that takes writes. A multi-host URL with
/// `target_session_attrs=read-write` lets libpq find the primary when it connects; this check
/// drops a connection whose server has since become read-only (an old primary come back as a
/// standby), so that the pool connects again, to whichever server is the primary now.
///
/// r2d2 runs the check each time it lends a connection; asking the server costs a round trip,
/// as much as a whole point read. So only a connection that sat idle for [`TRUST_FOR`] is
/// asked: one returned healthy just before is used as it is, and one whose write the server
/// refused as read-only is dropped when it comes back ([`PgConn::refused_writes`]).
///
/// Each connection gets its server-side bounds when made: `statement_timeout` (a statement
/// stuck on a lock is cancelled, not left holding others'), and
/// `idle_in_transaction_session_timeout` (a node that died inside a transaction does not
/// keep its row locks until TCP notices).
#[derive(Debug)]
pub(super) struct PrimaryOnly {
    pub(super) manager: ConnectionManager<PgConnection>,
    pub(super) statement_timeout: Duration,
    /// A store that only reads (`StoreConfig::read_only`): its transactions are read-only,
    /// and any server will do.
    pub(super) read_only: bool,
}

/// Fails with `ReadOnlyTransaction` unless the server of `conn` takes writes now.
pub(super) fn takes_writes(conn: &mut PgConnection) -> QueryResult<()> {
    let read_only = diesel::select(sql::<diesel::sql_types::Bool>(
        "pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on'",
    ))
    .get_result::<bool>(conn)?;
    if read_only {
        return Err(diesel::result::Error::DatabaseError(
            diesel::result::DatabaseErrorKind::ReadOnlyTransaction,
            Box::new("the server no longer takes writes".to_owned()),
        ));
    }
    Ok(())
}

/// How long after it last came back healthy a connection is lent without asking its server.
const TRUST_FOR: Duration = Duration::from_secs(1);

/// A connection of the pool, with what the pool needs to know of it.
pub(crate) struct PgConn {
    pub(super) conn: PgConnection,
    /// When it last came back to the pool unbroken.
    pub(super) returned: Instant,
    /// Whether its server refused a write as read-only: it is dropped when it comes back.
    pub(super) refused_writes: bool,
    /// The server's timeline when connected. A server the pool keeps takes writes, and a
    /// primary's timeline changes only when it restarts, which ends the connection.
    pub(super) timeline: i64,
}

impl std::ops::Deref for PgConn {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        &self.conn
    }
}

impl std::ops::DerefMut for PgConn {
    fn deref_mut(&mut self) -> &mut PgConnection {
        &mut self.conn
    }
}

impl diesel::r2d2::ManageConnection for PrimaryOnly {
    type Connection = PgConn;
    type Error = diesel::r2d2::Error;

    fn connect(&self) -> Result<PgConn, Self::Error> {
        let mut conn = self.manager.connect()?;
        conn.batch_execute(&format!(
            "SET statement_timeout = {}; SET idle_in_transaction_session_timeout = 30000; \
             SET default_transaction_isolation = 'read committed'{}",
            self.statement_timeout.as_millis().max(1),
            if self.read_only {
                "; SET default_transaction_read_only = on"
            } else {
                ""
            }
        ))
        .map_err(diesel::r2d2::Error::QueryError)?;
        let timeline = diesel::select(sql::<BigInt>(TIMELINE))
            .get_result(&mut conn)
            .map_err(diesel::r2d2::Error::QueryError)?;
        Ok(PgConn {
            conn,
            timeline,
            // Checked when first lent: a new connection may have reached a standby.
            returned: Instant::now()
                .checked_sub(TRUST_FOR)
                .unwrap_or_else(Instant::now),
            refused_writes: false,
        })
    }

    fn is_valid(&self, conn: &mut PgConn) -> Result<(), Self::Error> {
        if self.read_only || conn.returned.elapsed() < TRUST_FOR {
            return Ok(());
        }
        takes_writes(&mut conn.conn).map_err(diesel::r2d2::Error::QueryError)
    }

    fn has_broken(&self, conn: &mut PgConn) -> bool {
        if conn.refused_writes || self.manager.has_broken(&mut conn.conn) {
            return true;
        }
        conn.returned = Instant::now();
        false
    }
}

/// The URL libpq connects with: the configured one, with bounds on what the network may
/// cost where the URL sets none. A connection attempt gives up after `connect_timeout` (a
/// server that accepts and never answers would otherwise hold it for good), and the kernel
/// probes an idle connection (`keepalives_*`) and drops one whose sent data stays
/// unacknowledged (`tcp_user_timeout`): a dead server behind a lost route is noticed in
/// seconds, not after TCP's two hours.
pub(super) fn postgres_url(config: &StoreConfig) -> Result<String, StoreError> {
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

/// The server's timeline, which a promotion changes: the first eight hex digits of the name
/// of the WAL file being written. A standby writes none and says -1 (the pool drops
/// connections to one anyway; no timeline of a primary is -1).
pub(super) const TIMELINE: &str = "CASE WHEN pg_is_in_recovery() THEN -1 ELSE \
     ('x' || substr(pg_walfile_name(pg_current_wal_insert_lsn()), 1, 8))::bit(32)::bigint END";

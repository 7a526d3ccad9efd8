//! For tests that need a PostgreSQL server (feature `testing`): a database of their own on the
//! server named by `PETSTORE_TEST_POSTGRES_URL`, dropped when they end, so tests stay
//! parallel. Without the variable, PostgreSQL tests skip themselves.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use diesel::Connection;
use diesel::connection::SimpleConnection;
use diesel::pg::PgConnection;

use crate::config::{Database, StoreConfig};

/// The variable naming the server tests may create databases on, as a URL of a database that
/// exists (`postgres://postgres@127.0.0.1:5432/postgres`).
pub const POSTGRES_URL_VAR: &str = "PETSTORE_TEST_POSTGRES_URL";

/// Whether PostgreSQL tests run here: the server's URL is set.
pub fn postgres_configured() -> bool {
    std::env::var_os(POSTGRES_URL_VAR).is_some_and(|url| !url.is_empty())
}

/// The variable naming a hot standby of the server of [`POSTGRES_URL_VAR`], as a URL of any
/// database on it: where it is set, the stores and nodes of the tests read from it as a read
/// standby (`.ci/run` runs the HTTP tests so once), and the tests must pass unchanged.
pub const POSTGRES_REPLICA_URL_VAR: &str = "PETSTORE_TEST_POSTGRES_REPLICA_URL";

/// The read standby's URL for the test database at `url`: the same database on the server
/// of [`POSTGRES_REPLICA_URL_VAR`], where it is set and `url` is on the test server.
pub fn replica_for(url: &str) -> Option<String> {
    let replica = std::env::var(POSTGRES_REPLICA_URL_VAR)
        .ok()
        .filter(|url| !url.is_empty())?;
    let server = std::env::var(POSTGRES_URL_VAR).ok()?;
    standby_of(url, &server, &replica)
}

/// The database of `url` on `replica`, where `url` is on `server`.
fn standby_of(url: &str, server: &str, replica: &str) -> Option<String> {
    let authority = |url: &str| {
        let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
        rest.split(['/', '?']).next().unwrap_or(rest).to_owned()
    };
    if authority(url) != authority(server) {
        return None;
    }
    let base = url.split_once('?').map_or(url, |(base, _)| base);
    let name = base.rsplit_once('/').map(|(_, name)| name)?;
    Some(with_database(replica, name))
}

/// The variable choosing the backend of the HTTP layer's tests: `postgres` runs them on scratch
/// PostgreSQL databases (which then needs `PETSTORE_TEST_POSTGRES_URL`); anything else, or
/// nothing, on SQLite files.
pub const BACKEND_VAR: &str = "PETSTORE_TEST_BACKEND";

/// A database for one test, on the backend [`BACKEND_VAR`] chooses, removed when dropped.
#[derive(Debug)]
pub enum TestDatabase {
    /// A SQLite file in a temporary folder of its own.
    Sqlite {
        /// The file.
        path: std::path::PathBuf,
        /// Its folder, removed when dropped.
        dir: tempfile::TempDir,
    },
    /// A scratch PostgreSQL database.
    Postgres(ScratchPostgres),
}

impl TestDatabase {
    /// A new, empty database; `name` names the SQLite file.
    pub fn new(name: &str) -> Self {
        if std::env::var(BACKEND_VAR).is_ok_and(|backend| backend == "postgres") {
            let scratch = ScratchPostgres::create().unwrap_or_else(|| {
                panic!("{BACKEND_VAR}=postgres needs {POSTGRES_URL_VAR} to name a server")
            });
            return TestDatabase::Postgres(scratch);
        }
        let dir = tempfile::tempdir().unwrap_or_else(|error| panic!("a temporary folder: {error}"));
        TestDatabase::Sqlite {
            path: dir.path().join(format!("{name}.db")),
            dir,
        }
    }

    /// The database, as `--database` names it.
    pub fn arg(&self) -> String {
        match self {
            TestDatabase::Sqlite { path, .. } => path.display().to_string(),
            TestDatabase::Postgres(scratch) => scratch.url().to_owned(),
        }
    }

    /// A store configuration for it, with the defaults (and the test server's read standby,
    /// where [`POSTGRES_REPLICA_URL_VAR`] names one).
    pub fn config(&self) -> StoreConfig {
        let arg = self.arg();
        let mut config = StoreConfig::for_database(Database::parse(&arg));
        config.replicas.extend(replica_for(&arg));
        config
    }

    /// Whether it is a PostgreSQL database.
    pub fn is_postgres(&self) -> bool {
        matches!(self, TestDatabase::Postgres(_))
    }
}

/// A scratch database on the test server, dropped (with its connections) when this is.
#[derive(Debug)]
pub struct ScratchPostgres {
    server: String,
    name: String,
    url: String,
}

impl ScratchPostgres {
    /// A new, empty database, or `None` when no server is configured. Panics when one is
    /// configured but cannot be used: a test that should run must not pass by skipping.
    pub fn create() -> Option<Self> {
        let server = std::env::var(POSTGRES_URL_VAR)
            .ok()
            .filter(|url| !url.is_empty())?;
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.subsec_nanos());
        let name = format!(
            "petstore_test_{}_{}_{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut admin = PgConnection::establish(&server).unwrap_or_else(|error| {
            panic!("{POSTGRES_URL_VAR} is set, but its server cannot be reached: {error}")
        });
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|error| panic!("cannot create the test database {name}: {error}"));
        let url = with_database(&server, &name);
        Some(Self { server, name, url })
    }

    /// The database's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A store configuration for it, with the defaults (and the test server's read standby,
    /// where [`POSTGRES_REPLICA_URL_VAR`] names one).
    pub fn config(&self) -> StoreConfig {
        let mut config = StoreConfig::for_database(Database::Postgres(self.url.clone()));
        config.replicas.extend(replica_for(&self.url));
        config
    }
}

impl ScratchPostgres {
    /// Drops the database now, keeping its name: for a test of what creates a missing one
    /// (dropped again, if made, when this is).
    pub fn remove(&self) {
        let mut admin = PgConnection::establish(&self.server)
            .unwrap_or_else(|error| panic!("{POSTGRES_URL_VAR}'s server: {error}"));
        admin
            .batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ))
            .unwrap_or_else(|error| panic!("cannot drop {}: {error}", self.name));
    }
}

impl Drop for ScratchPostgres {
    fn drop(&mut self) {
        // Best effort: a database left behind costs disk, not correctness.
        if let Ok(mut admin) = PgConnection::establish(&self.server) {
            let _ = admin.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// `url` with its database name replaced by `name`.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (url, String::new()),
    };
    let (scheme, rest) = base.split_once("://").unwrap_or(("postgres", base));
    let authority = rest.split('/').next().unwrap_or(rest);
    format!("{scheme}://{authority}/{name}{query}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_database_name_is_replaced() {
        assert_eq!(
            super::with_database("postgres://u@h:5432/postgres", "t1"),
            "postgres://u@h:5432/t1"
        );
        assert_eq!(
            super::with_database("postgresql://h/db?sslmode=disable", "t2"),
            "postgresql://h/t2?sslmode=disable"
        );
        assert_eq!(
            super::with_database("postgres://h", "t3"),
            "postgres://h/t3"
        );
    }

    #[test]
    fn only_a_database_of_the_test_server_has_the_test_standby() {
        let server = "postgres://postgres@127.0.0.1:5432/postgres";
        let replica = "postgres://postgres@127.0.0.1:5499/postgres?sslmode=disable";
        assert_eq!(
            super::standby_of(
                "postgres://postgres@127.0.0.1:5432/petstore_test_1?x=1",
                server,
                replica
            )
            .as_deref(),
            Some("postgres://postgres@127.0.0.1:5499/petstore_test_1?sslmode=disable")
        );
        assert_eq!(
            super::standby_of("postgres://other:5432/db", server, replica),
            None
        );
    }
}

//! Opening a SQLite file: the pragmas every connection gets, the connections made outside the
//! pools (to migrate, to read only, to look at a file that may not be ours), and judging and
//! migrating the file before the store opens it. Kept apart from the store itself (`mod.rs`),
//! which uses them once, at its start.

use diesel::Connection;
use diesel::connection::SimpleConnection;
use diesel::r2d2::CustomizeConnection;
use diesel::sqlite::SqliteConnection;
use diesel_migrations::MigrationHarness;

use super::MIGRATIONS;
use crate::config::{Database, StoreConfig};
use crate::error::StoreError;
use crate::ownership::{self, Found};

/// Set on every connection the pools open.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pragmas {
    busy_timeout_ms: u128,
    synchronous: &'static str,
}

impl Pragmas {
    /// The pragmas `config` asks for.
    pub(super) fn of(config: &StoreConfig) -> Self {
        Self {
            busy_timeout_ms: config.busy_timeout.as_millis(),
            synchronous: config.durability.pragma(),
        }
    }

    /// `temp_store = MEMORY`: a statement that may have to undo part of itself inside the
    /// writer's savepoint (an upsert, a statement firing triggers) keeps its statement journal
    /// in memory. In a file, each such statement wrote every page it changed there as well,
    /// a write call each: a keyed order's record wrote three times the bytes of the order.
    ///
    /// `wal_autocheckpoint = 10000` pages (about 40 MiB of log): the writer copies the log
    /// into the file once it has grown so far. Orders change the same pages again and again (a
    /// pet's row, the leaves of the indexes by pet), and each checkpoint writes each of them
    /// once: at SQLite's 1,000 a keyed order under load cost the service about a tenth more CPU
    /// (keyed orders over 1,000 pets, 32 clients, the two settings in turn on fresh copies).
    fn sql(self) -> String {
        format!(
            "PRAGMA busy_timeout = {}; PRAGMA foreign_keys = ON; PRAGMA synchronous = {}; \
             PRAGMA temp_store = MEMORY; PRAGMA wal_autocheckpoint = 10000;",
            self.busy_timeout_ms, self.synchronous
        )
    }
}

impl CustomizeConnection<SqliteConnection, diesel::r2d2::Error> for Pragmas {
    fn on_acquire(&self, conn: &mut SqliteConnection) -> Result<(), diesel::r2d2::Error> {
        conn.batch_execute(&self.sql())
            .map_err(diesel::r2d2::Error::QueryError)
    }
}

pub(super) fn database_url(config: &StoreConfig) -> Result<&str, StoreError> {
    let Database::Sqlite(path) = &config.database else {
        return Err(StoreError::Config(format!(
            "{} is not a SQLite database",
            config.database
        )));
    };
    path.to_str().ok_or_else(|| {
        StoreError::Config(format!(
            "the database path {} is not valid UTF-8",
            path.display()
        ))
    })
}

/// Opens one connection with the pragmas of `config`, outside any pool (read-only if
/// `config.read_only`). A failure names the file; a file that does not exist is refused
/// unless `config.create`, and one this creates is readable by its owner only.
pub fn connect(config: &StoreConfig) -> Result<SqliteConnection, StoreError> {
    if config.read_only {
        return connect_read_only(config);
    }
    let url = database_url(config)?;
    let path = std::path::Path::new(url);
    if !path.exists() {
        if !config.create {
            return Err(StoreError::Config(format!(
                "there is no database at {url}: `petstore migrate` or `petstore serve` creates one"
            )));
        }
        create_private(path)?;
    }
    establish(config, url)
}

/// Opens one connection to the existing file of `config` that can only read (`mode=ro`):
/// it writes nothing to the file or its log, whatever else holds it.
fn connect_read_only(config: &StoreConfig) -> Result<SqliteConnection, StoreError> {
    let url = database_url(config)?;
    if !std::path::Path::new(url).exists() {
        return Err(StoreError::Config(format!("there is no database at {url}")));
    }
    establish(config, &read_only_uri(url))
}

/// Opens one connection to read the existing file of `config`, leaving nothing beside it.
/// A file with no `-wal` holds all its data itself (the first connection to open it in WAL
/// mode makes one), and is read as immutable, around SQLite's locks: a read-only connection
/// would leave an empty `-wal` and `-shm` behind, which it may not delete. That read holds
/// only if [`Untouched::confirm`] then finds the file as it was. A file with a `-wal` is in
/// use, and is read `mode=ro` through that log, beside whoever uses it.
pub(crate) fn connect_unchanged(
    config: &StoreConfig,
) -> Result<(SqliteConnection, Untouched), StoreError> {
    let url = database_url(config)?;
    let file = std::path::Path::new(url);
    if !file.exists() {
        return Err(StoreError::Config(format!("there is no database at {url}")));
    }
    let mut untouched = Untouched {
        file: file.to_path_buf(),
        was: None,
    };
    if untouched.wal().exists() {
        return Ok((connect_read_only(config)?, untouched));
    }
    untouched.was = Some(untouched.stamp()?);
    let conn = establish(config, &format!("{}&immutable=1", read_only_uri(url)))?;
    Ok((conn, untouched))
}

/// A SQLite file read around SQLite's locks, as it was when opened: its length and its last
/// change. No process may have opened it meanwhile (it would have made a `-wal`, and left
/// the file changed when it closed) for what was read to hold together.
#[derive(Debug, Default)]
pub(crate) struct Untouched {
    file: std::path::PathBuf,
    /// `None` when the read went through SQLite's locks: nothing to confirm.
    was: Option<(u64, std::time::SystemTime)>,
}

impl Untouched {
    fn wal(&self) -> std::path::PathBuf {
        let mut name = self.file.clone().into_os_string();
        name.push("-wal");
        name.into()
    }

    fn stamp(&self) -> Result<(u64, std::time::SystemTime), StoreError> {
        std::fs::metadata(&self.file)
            .and_then(|meta| Ok((meta.len(), meta.modified()?)))
            .map_err(|e| StoreError::Config(format!("cannot read {}: {e}", self.file.display())))
    }

    /// Whether the file is as it was when opened, so that what was read of it holds; an
    /// error naming `database` if another process has opened it since.
    pub(crate) fn confirm(&self, database: &Database) -> Result<(), StoreError> {
        let Some(was) = self.was else {
            return Ok(());
        };
        if self.wal().exists() || self.stamp().ok() != Some(was) {
            return Err(StoreError::ChangedWhileRead {
                database: database.to_string(),
            });
        }
        Ok(())
    }
}

fn establish(config: &StoreConfig, url: &str) -> Result<SqliteConnection, StoreError> {
    let mut conn = SqliteConnection::establish(url).map_err(|cause| StoreError::Unreachable {
        database: config.database.to_string(),
        cause: cause.to_string(),
    })?;
    let pragmas = Pragmas::of(config);
    conn.batch_execute(&pragmas.sql())?;
    Ok(conn)
}

/// `path` as a SQLite URI that opens it read-only (`?`, `#` and `%` escaped, as a URI
/// filename needs).
pub(super) fn read_only_uri(path: &str) -> String {
    let escaped = path
        .replace('%', "%25")
        .replace('?', "%3f")
        .replace('#', "%23");
    format!("file:{escaped}?mode=ro")
}

/// Creates the empty database file, readable and writable by its owner only whatever the
/// umask: it will hold key hashes and webhook signing secrets. SQLite gives the file's `-wal`
/// and `-shm` the file's own permissions.
fn create_private(path: &std::path::Path) -> Result<(), StoreError> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        // Made meanwhile by another process starting on the same file: theirs stands.
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(StoreError::Config(format!(
            "unable to open the database file {} to create it: {error}",
            path.display()
        ))),
    }
}

/// Whether the file of `config` is new (none, or empty) or this service's, read without
/// changing it ([`ownership`](crate::ownership)).
pub(crate) fn inspect_sqlite(config: &StoreConfig) -> Result<Found, StoreError> {
    let url = database_url(config)?;
    let path = std::path::Path::new(url);
    if std::fs::metadata(path).map_or(true, |meta| meta.len() == 0) {
        if !config.create && !path.exists() {
            return Err(StoreError::Config(format!(
                "there is no database at {url}: `petstore migrate` or `petstore serve` creates one"
            )));
        }
        return Ok(Found::New);
    }
    // The first reads of the file: SQLite's own words ("file is not a database") name none.
    let unreadable = |error: StoreError| match error {
        StoreError::Query(_) => StoreError::Config(format!(
            "{url} cannot be read as a SQLite database ({error}). Nothing was changed"
        )),
        other => other,
    };
    // A brief look, creating nothing beside a file that may not be ours: what it finds is
    // judged again by whatever opens the file next.
    let (mut conn, _) = connect_unchanged(config).map_err(unreadable)?;
    let tables = ownership::names(
        &mut conn,
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
    )
    .map_err(unreadable)?;
    let applied = ownership::applied(&mut conn, &tables)?;
    let known = ownership::versions::<diesel::sqlite::Sqlite>(&MIGRATIONS)?;
    ownership::judge(&config.database, &tables, applied, &known)
}

/// Creates the database if needed, switches it to WAL and applies pending migrations.
/// Returns the versions applied.
pub fn migrate_sqlite(config: &StoreConfig) -> Result<Vec<String>, StoreError> {
    let found = inspect_sqlite(config)?;
    let mut conn = connect(config)?;
    // WAL is a property of the file: set once, it stays.
    conn.batch_execute("PRAGMA journal_mode = WAL;")?;
    // A new database has no older node to wait for: it is finished at once.
    let applied: Vec<String> = if found == Found::New {
        conn.run_pending_migrations(MIGRATIONS)
    } else {
        conn.run_pending_migrations(crate::upgrade::Additive(&MIGRATIONS))
    }
    .map_err(|e| StoreError::Migration(e.to_string()))?
    .iter()
    .map(ToString::to_string)
    .collect();
    #[cfg(feature = "plant-hold-guard-off")]
    crate::plant::drop_hold_guard(&mut conn, false)?;
    Ok(applied)
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        reason = "a test stops at the first thing that is not as expected"
    )]

    use super::*;

    /// A read around SQLite's locks holds while nothing opens the file, and not once a
    /// connection has opened it in WAL mode (as a node starting would) or changed it.
    #[test]
    fn a_file_read_around_the_locks_is_confirmed_only_if_no_one_opened_it() {
        let dir = tempfile::tempdir().unwrap();
        let config = StoreConfig::new(dir.path().join("shop.db"));
        migrate_sqlite(&config).unwrap();
        let (mut conn, untouched) = connect_unchanged(&config).unwrap();
        conn.batch_execute("SELECT count(*) FROM categories")
            .unwrap();
        untouched.confirm(&config.database).unwrap();

        let mut node = connect(&config).unwrap();
        node.batch_execute("SELECT count(*) FROM categories")
            .unwrap();
        let opened = untouched.confirm(&config.database);
        assert!(
            matches!(&opened, Err(StoreError::ChangedWhileRead { .. })),
            "{opened:?}"
        );
        // While it is open, a read goes through its log and has nothing to confirm.
        let (_, beside_the_node) = connect_unchanged(&config).unwrap();
        beside_the_node.confirm(&config.database).unwrap();

        // Written and closed in between: the file is not what was read.
        drop(node);
        let (_, untouched) = connect_unchanged(&config).unwrap();
        connect(&config)
            .unwrap()
            .batch_execute("INSERT INTO categories (name, name_key) VALUES ('Dogs', 'dogs')")
            .unwrap();
        let changed = untouched.confirm(&config.database);
        assert!(
            matches!(&changed, Err(StoreError::ChangedWhileRead { .. })),
            "{changed:?}"
        );
    }
}

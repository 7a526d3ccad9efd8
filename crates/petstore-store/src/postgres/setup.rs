//! What comes before a PostgreSQL store serves anything: its database created if missing,
//! judged as this service's, migrated under a lock, and its pool built. Kept apart from the
//! store itself (`mod.rs`), which runs reads and writes once these are done.

use diesel::RunQueryDsl;
use diesel::connection::SimpleConnection;
use diesel::dsl::sql;
use diesel::pg::PgConnection;
use diesel::r2d2::{ConnectionManager, Pool};
use diesel::sql_types::Text;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

use super::connection::{PgPool, PrimaryOnly, connect_postgres, postgres_url};
use crate::config::{Database, StoreConfig};
use crate::error::StoreError;
use crate::ownership::{self, Found};
use crate::upgrade::Additive;

/// The PostgreSQL migrations in `migrations/postgres/`, compiled into the binary.
pub const PG_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");

/// The session-level advisory lock migrations run under, so that nodes starting together
/// migrate one at a time.
const MIGRATION_LOCK: i64 = 0x7065_7473_746f_7265;

/// Creates the database `config` names if the server says it does not exist (for `serve`,
/// `migrate` and the target of `copy`), connecting to the server's `postgres` database to do
/// so. A role that may not
/// create databases is told exactly what to run, and which privileges it needs.
fn create_database_if_missing(config: &StoreConfig) -> Result<(), StoreError> {
    let missing = match connect_postgres(config) {
        Ok(_) => return Ok(()),
        Err(StoreError::Unreachable { cause, .. }) if cause.contains("does not exist") => cause,
        Err(other) => return Err(other),
    };
    let Database::Postgres(url) = &config.database else {
        return Ok(());
    };
    let Some((name, maintenance)) = database_name(url) else {
        return Err(StoreError::Config(missing));
    };
    let mut server = config.clone();
    server.database = Database::Postgres(maintenance);
    let mut conn = connect_postgres(&server)?;
    let quoted = format!("\"{}\"", name.replace('"', "\"\""));
    match conn.batch_execute(&format!("CREATE DATABASE {quoted}")) {
        Ok(()) => Ok(()),
        // Another node starting at the same time made it first.
        Err(_) if connect_postgres(config).is_ok() => Ok(()),
        Err(error) => {
            let role: String = diesel::select(sql::<Text>("current_user::text"))
                .get_result(&mut conn)
                .unwrap_or_else(|_| "the role".to_owned());
            Err(StoreError::Config(format!(
                "the database {name} does not exist, and {role} may not create it ({error}). \
                 Run, as a role that may (a superuser, or one with CREATEDB): \
                 CREATE DATABASE {quoted} OWNER \"{role}\"; then run this command again. The role \
                 the service uses needs CONNECT on the database and CREATE on its schema (the \
                 owner of a new database has both)"
            )))
        }
    }
}

/// The database name in a `postgres://` URL, and the same URL naming the server's
/// `postgres` database instead.
fn database_name(url: &str) -> Option<(String, String)> {
    let (scheme, rest) = url.split_once("://")?;
    let (authority, path) = rest.split_once('/')?;
    let (name, query) = match path.split_once('?') {
        Some((name, query)) => (name, Some(query)),
        None => (path, None),
    };
    if name.is_empty() || name.contains('%') {
        return None;
    }
    let maintenance = match query {
        Some(query) => format!("{scheme}://{authority}/postgres?{query}"),
        None => format!("{scheme}://{authority}/postgres"),
    };
    Some((name.to_owned(), maintenance))
}

/// Whether the schema `config`'s connections use is new (no table) or this service's, read in
/// a session whose transactions are read-only ([`ownership`](crate::ownership)).
pub(crate) fn inspect_postgres(config: &StoreConfig) -> Result<Found, StoreError> {
    let mut conn = connect_postgres(config)?;
    conn.batch_execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")?;
    let tables = ownership::names(
        &mut conn,
        "SELECT table_name::text AS name FROM information_schema.tables \
         WHERE table_schema = current_schema()",
    )?;
    let applied = ownership::applied(&mut conn, &tables)?;
    let known = ownership::versions::<diesel::pg::Pg>(&PG_MIGRATIONS)?;
    ownership::judge(&config.database, &tables, applied, &known)
}

/// Applies pending migrations, one node at a time. Returns the versions applied.
pub fn migrate_postgres(config: &StoreConfig) -> Result<Vec<String>, StoreError> {
    // As a missing SQLite file is: `serve` and `migrate` create what they are pointed at.
    if config.create {
        create_database_if_missing(config)?;
    }
    let found = inspect_postgres(config)?;
    let mut conn = connect_postgres(config)?;
    let applied = with_migration_lock(&mut conn, |conn| {
        // A new database has no older node to wait for: it is finished at once. (Another
        // node migrating it first leaves nothing pending here.)
        if found == Found::New {
            conn.run_pending_migrations(PG_MIGRATIONS)
        } else {
            conn.run_pending_migrations(Additive(&PG_MIGRATIONS))
        }
        .map(|versions| versions.iter().map(ToString::to_string).collect())
    })?
    .map_err(|e| StoreError::Migration(e.to_string()))?;
    #[cfg(feature = "plant-hold-guard-off")]
    crate::plant::drop_hold_guard(&mut conn, true)?;
    Ok(applied)
}

/// Runs `migrate` holding the lock every node's migrations take, so that they run one node
/// at a time.
pub(crate) fn with_migration_lock<T>(
    conn: &mut PgConnection,
    migrate: impl FnOnce(&mut PgConnection) -> T,
) -> Result<T, StoreError> {
    conn.batch_execute(&format!("SELECT pg_advisory_lock({MIGRATION_LOCK})"))?;
    let migrated = migrate(conn);
    // Closing the connection would release it too; unlocking keeps the session reusable.
    conn.batch_execute(&format!("SELECT pg_advisory_unlock({MIGRATION_LOCK})"))?;
    Ok(migrated)
}

/// The pool a store's reads and writes share, its connections kept to a primary unless the
/// store only reads ([`PrimaryOnly`]).
pub(super) fn build_pool(config: &StoreConfig) -> Result<PgPool, StoreError> {
    Pool::builder()
        .max_size(config.readers.max(2))
        .min_idle(Some(1))
        .connection_timeout(config.connection_timeout)
        .build(PrimaryOnly {
            manager: ConnectionManager::new(postgres_url(config)?),
            statement_timeout: config.statement_timeout,
            read_only: config.read_only,
        })
        .map_err(|cause| StoreError::Unreachable {
            database: config.database.to_string(),
            cause: cause.to_string(),
        })
}

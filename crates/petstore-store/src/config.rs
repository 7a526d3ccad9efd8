//! How to open a store: which database, and how connections behave.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Which database a store opens. Parsed from the `--database` argument: a `postgres://` or
/// `postgresql://` URL is a PostgreSQL database, anything else the path of a SQLite file.
#[derive(Clone, PartialEq, Eq)]
pub enum Database {
    /// A SQLite file; created, and migrated, if missing.
    Sqlite(PathBuf),
    /// A PostgreSQL database, by its libpq connection URL.
    Postgres(String),
}

impl Database {
    /// The database named by a `--database` argument.
    pub fn parse(text: &str) -> Self {
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            Database::Postgres(text.to_owned())
        } else {
            Database::Sqlite(PathBuf::from(text))
        }
    }
}

/// For logs and messages: a URL's password is never shown.
impl fmt::Display for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Database::Sqlite(path) => write!(f, "{}", path.display()),
            Database::Postgres(url) => f.write_str(&redact_password(url)),
        }
    }
}

impl fmt::Debug for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Database::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            Database::Postgres(_) => f.debug_tuple("Postgres").field(&self.to_string()).finish(),
        }
    }
}

/// `scheme://user:secret@host/db?password=secret` with both secrets replaced by `***`.
pub fn redact_password(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(end) => rest.split_at(end),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((credentials, host)) => match credentials.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => authority.to_owned(),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((name, _)) if name == "password" => format!("{name}=***"),
                    _ => pair.to_owned(),
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// When a commit is durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// `synchronous=FULL`: a commit is on disk before it is acknowledged, so a committed order
    /// survives power loss. The default.
    #[default]
    Full,
    /// `synchronous=NORMAL`: faster commits; in WAL mode the database stays consistent, but the
    /// last commits before a power loss (not a process crash) may be lost.
    Normal,
}

impl Durability {
    pub(crate) fn pragma(self) -> &'static str {
        match self {
            Durability::Full => "FULL",
            Durability::Normal => "NORMAL",
        }
    }
}

/// Where the database is and how connections behave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreConfig {
    /// The database.
    pub database: Database,
    /// Whether a SQLite file, or a PostgreSQL database, that does not exist is created
    /// (`serve`, `migrate`), or refused (`keys`: a mistyped path must not become an empty
    /// database).
    pub create: bool,
    /// Whether the database is only read (`keys list`, `check`, `backup`, `copy --from`): it
    /// is opened read-only and never migrated, and must be this service's at this version.
    pub read_only: bool,
    /// When commits are durable (SQLite; a PostgreSQL server decides its own).
    pub durability: Durability,
    /// Connections for reads on SQLite, which run in parallel with each other and with the
    /// writer (WAL); on PostgreSQL, the size of the one pool reads and writes share.
    pub readers: u32,
    /// How long a statement waits for a lock held by another connection or process
    /// (`busy_timeout`) before failing as unavailable.
    pub busy_timeout: Duration,
    /// How long a caller waits for a free connection before failing as unavailable.
    pub connection_timeout: Duration,
    /// PostgreSQL: how long one statement of the pool's connections may run on the server
    /// (`statement_timeout`) before the server cancels it, and so for how long it may hold
    /// its locks. Migrations, `copy` and `backup` use connections of their own, unbounded.
    pub statement_timeout: Duration,
    /// PostgreSQL: how long a call handed to the store's executor may take in all, whatever
    /// the network does: past it a read is answered `Unavailable` and a write
    /// `OutcomeUnknown` ([`Executor::deadline`](crate::Executor::deadline)). SQLite bounds
    /// each of its waits itself.
    pub deadline: Duration,
    /// PostgreSQL: hot standbys of the primary that may serve reads, by their libpq URLs (the
    /// same database; each URL carries its own TLS settings and connection bounds). None: the
    /// primary serves every read.
    pub replicas: Vec<String>,
    /// PostgreSQL with read standbys: the most a read waits for a standby to have replayed
    /// far enough before the primary serves it instead.
    pub replica_wait: Duration,
}

impl StoreConfig {
    /// The defaults for a SQLite database at `path`: full durability, 4 readers, 5 s waits.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self::for_database(Database::Sqlite(path.into()))
    }

    /// The defaults for `database`: full durability, 4 readers (or pooled connections), 5 s
    /// waits.
    pub fn for_database(database: Database) -> Self {
        Self {
            database,
            create: true,
            read_only: false,
            durability: Durability::Full,
            readers: 4,
            busy_timeout: Duration::from_secs(5),
            connection_timeout: Duration::from_secs(5),
            statement_timeout: Duration::from_secs(5),
            deadline: Duration::from_secs(5),
            replicas: Vec::new(),
            replica_wait: Duration::from_millis(50),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_postgres_and_anything_else_a_file() {
        assert!(matches!(
            Database::parse("postgres://u@h/db"),
            Database::Postgres(_)
        ));
        assert!(matches!(
            Database::parse("postgresql://h/db"),
            Database::Postgres(_)
        ));
        assert_eq!(
            Database::parse("petstore.db"),
            Database::Sqlite(PathBuf::from("petstore.db"))
        );
        assert_eq!(
            Database::parse("./postgres:/x.db"),
            Database::Sqlite(PathBuf::from("./postgres:/x.db"))
        );
    }

    #[test]
    fn passwords_never_show() {
        let shown = Database::parse(
            "postgres://shop:s3cret@db.local:5432/shop?password=s3cret&sslmode=disable",
        );
        let text = format!("{shown} {shown:?}");
        assert!(!text.contains("s3cret"), "{text}");
        assert!(text.contains("shop:***@db.local:5432/shop"), "{text}");
        assert!(text.contains("sslmode=disable"), "{text}");
        assert_eq!(
            Database::parse("postgres://h/db").to_string(),
            "postgres://h/db"
        );
    }
}

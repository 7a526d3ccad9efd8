//! How to open a store.

use std::path::PathBuf;
use std::time::Duration;

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
    /// The database file; created, and migrated, if missing.
    pub path: PathBuf,
    /// When commits are durable.
    pub durability: Durability,
    /// Connections for reads; they run in parallel with each other and with the writer (WAL).
    pub readers: u32,
    /// How long a statement waits for a lock held by another connection or process
    /// (`busy_timeout`) before failing as unavailable.
    pub busy_timeout: Duration,
    /// How long a caller waits for a free connection before failing as unavailable.
    pub connection_timeout: Duration,
}

impl StoreConfig {
    /// The defaults for a database at `path`: full durability, 4 readers, 5 s waits.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            durability: Durability::Full,
            readers: 4,
            busy_timeout: Duration::from_secs(5),
            connection_timeout: Duration::from_secs(5),
        }
    }
}

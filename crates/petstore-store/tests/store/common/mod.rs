//! A store on a fresh temporary database file, removed when dropped.

#![allow(dead_code, reason = "each test file uses its own part of this module")]
#![allow(
    clippy::expect_used,
    reason = "test support: a failed setup should stop the test"
)]

use petstore_core::{RepoResult, Snapshot, Store, Transaction};
use petstore_store::testing::ScratchPostgres;
use petstore_store::{PgStore, SqliteStore, StoreConfig};
use tempfile::TempDir;

/// A `SqliteStore` on its own database file in its own temporary folder.
pub(crate) struct TempStore {
    pub store: SqliteStore,
    pub config: StoreConfig,
    _dir: TempDir,
}

impl TempStore {
    pub(crate) fn new() -> Self {
        Self::with(|_| {})
    }

    /// A store whose configuration `adjust` may change first.
    pub(crate) fn with(adjust: impl FnOnce(&mut StoreConfig)) -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let mut config = StoreConfig::new(dir.path().join("petstore.db"));
        adjust(&mut config);
        let store = SqliteStore::open(&config).expect("open the store");
        Self {
            store,
            config,
            _dir: dir,
        }
    }
}

impl Store for TempStore {
    fn read<T>(&self, work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>) -> RepoResult<T> {
        self.store.read(work)
    }

    fn write<T>(&self, work: impl FnMut(&mut dyn Transaction) -> RepoResult<T>) -> RepoResult<T> {
        self.store.write(work)
    }
}

/// A `PgStore` on its own scratch database, dropped with it. Panics when no server is
/// configured: tests using it run only where `postgres_configured()`.
pub(crate) struct TempPgStore {
    pub store: PgStore,
    pub config: StoreConfig,
    // Dropped after the store's pool, so that the database is dropped last.
    database: ScratchPostgres,
}

impl TempPgStore {
    pub(crate) fn new() -> Self {
        Self::with(|_| {})
    }

    /// A store whose configuration `adjust` may change first.
    pub(crate) fn with(adjust: impl FnOnce(&mut StoreConfig)) -> Self {
        let database = ScratchPostgres::create().expect("a PostgreSQL server for tests");
        let mut config = database.config();
        adjust(&mut config);
        let store = PgStore::open(&config).expect("open the store");
        Self {
            store,
            config,
            database,
        }
    }

    /// The scratch database's URL.
    pub(crate) fn url(&self) -> &str {
        self.database.url()
    }
}

impl Store for TempPgStore {
    fn read<T>(&self, work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>) -> RepoResult<T> {
        self.store.read(work)
    }

    fn read_one<T>(&self, work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>) -> RepoResult<T> {
        self.store.read_one(work)
    }

    fn write<T>(&self, work: impl FnMut(&mut dyn Transaction) -> RepoResult<T>) -> RepoResult<T> {
        self.store.write(work)
    }
}

/// A store's [`Executor`] whose threads are woken only when the test says: jobs queued
/// before [`wake`](HeldExecutor::wake) are all waiting when a thread wakes, and run as one
/// burst.
pub(crate) struct HeldExecutor {
    pub executor: petstore_store::Executor,
    wake_ups: std::sync::Arc<std::sync::Mutex<Vec<petstore_store::WakeUp>>>,
}

impl HeldExecutor {
    pub(crate) fn start(store: &SqliteStore) -> Self {
        Self::start_any(&petstore_store::AnyStore::Sqlite(store.clone()))
    }

    /// [`start`](Self::start) for either backend.
    pub(crate) fn start_any(store: &petstore_store::AnyStore) -> Self {
        let wake_ups = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let held = std::sync::Arc::clone(&wake_ups);
        let wake: petstore_store::Wake = std::sync::Arc::new(move |wake_up| {
            held.lock().expect("the wake-ups").push(wake_up);
        });
        let executor = petstore_store::Executor::start(store, wake).expect("the threads start");
        Self { executor, wake_ups }
    }

    /// Runs the wake-ups held so far.
    pub(crate) fn wake(&self) {
        self.wake_ups.lock().expect("the wake-ups").clear();
    }
}

/// What a queued job answered: `None` if it gave no answer (its work panicked).
pub(crate) fn answer_of<T>(answered: &std::sync::mpsc::Receiver<T>) -> Option<T> {
    answered
        .recv_timeout(std::time::Duration::from_secs(10))
        .ok()
}

//! A store on a fresh temporary database file, removed when dropped.

#![allow(dead_code)] // each test file uses its own part of this module
#![allow(clippy::expect_used)] // test support: a failed setup should stop the test

use petstore_core::{RepoResult, Snapshot, Store, Transaction};
use petstore_store::{SqliteStore, StoreConfig};
use tempfile::TempDir;

/// A `SqliteStore` on its own database file in its own temporary folder.
pub struct TempStore {
    pub store: SqliteStore,
    pub config: StoreConfig,
    _dir: TempDir,
}

impl TempStore {
    pub fn new() -> Self {
        Self::with(|_| {})
    }

    /// A store whose configuration `adjust` may change first.
    pub fn with(adjust: impl FnOnce(&mut StoreConfig)) -> Self {
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

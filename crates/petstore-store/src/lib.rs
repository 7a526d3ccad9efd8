//! The pet store's repositories on SQLite, through Diesel 2 and r2d2.
//!
//! [`SqliteStore`] implements the domain's [`Store`](petstore_core::Store): every use case of
//! [`petstore_core::Service`] runs on it unchanged. The database runs in WAL mode with one
//! writer connection (write transactions begin `IMMEDIATE`; writes that arrive together share
//! one commit) and a pool of readers; see the module docs of `store.rs` and `writer.rs` for
//! why. Migrations from the repository's `migrations/` folder are
//! compiled in and applied by [`SqliteStore::open`] or [`migrate`].
//!
//! ```no_run
//! use petstore_core::Service;
//! use petstore_store::{SqliteStore, StoreConfig};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = SqliteStore::open(&StoreConfig::new("petstore.db"))?;
//! let shop = Service::new(store);
//! # Ok(())
//! # }
//! ```
//!
//! All SQLite-specific SQL stays in this crate, behind the domain's traits.

#![deny(missing_docs)]

mod config;
mod error;
mod postgres;
mod records;
mod schema;
mod sqlite;
mod statements;
mod store;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use config::{Database, Durability, StoreConfig};
pub use error::StoreError;
pub use postgres::{PG_MIGRATIONS, PgStore, connect_postgres, migrate_postgres};
pub use sqlite::{
    Executor, MIGRATIONS, MIN_FREE_BYTES, PoolState, SqliteStore, Wake, WakeUp, WriterStats,
    connect, migrate_sqlite,
};
pub use store::{AnyStore, JobStore, migrate};

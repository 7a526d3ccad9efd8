//! The pet store's repositories on SQLite and PostgreSQL, through Diesel 2 and r2d2.
//!
//! [`SqliteStore`] and [`PgStore`] implement the domain's [`Store`](petstore_core::Store):
//! every use case of [`petstore_core::Service`] runs on either unchanged, and [`AnyStore`] is
//! whichever a [`Database`] names. On SQLite the database runs in WAL mode with one writer
//! connection (write transactions begin `IMMEDIATE`; writes that arrive together share one
//! commit) and a pool of readers; see the module docs of `sqlite/writer.rs` for why. The
//! statements are written once for both backends (`repositories/`). Migrations from the
//! repository's `migrations/` folder are compiled in and applied by [`SqliteStore::open`],
//! [`PgStore::open`] or [`migrate`].
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
//! A server that runs many requests at once does better with the store's own threads:
//! [`Executor::start`] starts them. On SQLite it runs the reads queued at once in one read
//! transaction and the writes queued at once in one turn of the writer, handing each piece of
//! work a [`JobStore`] over its burst, and answers a write only after the commit it shares.
//! On PostgreSQL a few threads take the reads queued at once and run them one after another
//! on the pool; and several writer threads (writes wait on the server's locks) each run the
//! writes queued at once in one transaction, answering each after its commit.

#![deny(missing_docs)]

mod check;
mod config;
mod error;
mod executor;
mod freshness;
mod job;
mod key_records;
mod known_rows;
mod ownership;
#[cfg(any(
    feature = "plant-answer-before-commit",
    feature = "plant-hold-guard-off"
))]
mod plant;
mod postgres;
mod records;
mod schema;
mod shop;
mod sqlite;
mod statements;
mod stats;
mod store;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod transfer;
mod upgrade;
mod upkeep;

pub use check::check;
pub use config::{Database, Durability, StoreConfig, redact_password};
pub use error::{StoreError, is_storage_fault};
pub use executor::{Executor, Wake, WakeUp};
pub use freshness::{Freshness, NotAPosition, Position};
pub use job::{JobStore, KeyName, ReadNames, Row, WriteNames};
pub use ownership::Found;
pub use postgres::{PG_MIGRATIONS, PgStore, connect_postgres, migrate_postgres};
pub use sqlite::{MIGRATIONS, MIN_FREE_BYTES, SqliteStore, connect, migrate_sqlite};
pub use stats::{PoolState, ServerReads, WriterStats};
pub use store::{AnyStore, finish_plan, finish_upgrade, inspect, migrate};
pub use transfer::{Copied, Progress, backup, copy};
pub use upgrade::{FinishPlan, HEARTBEAT_EVERY, OlderNode};

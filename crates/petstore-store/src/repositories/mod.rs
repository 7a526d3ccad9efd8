//! The repository traits on one transaction of either backend: the statements, written once.
//!
//! This module is compiled once for each backend (`sqlite/tx.rs` and `postgres/tx.rs` declare
//! it with `#[path]`), for that backend's transaction type, `Tx`. What truly differs between
//! the two is a method of `Tx` each backend defines for itself:
//! - `page`: how a page's `LIMIT` is written (on SQLite as text, so cached plans stay valid);
//! - `row_for_update!` and `row_for_no_key_update!` (macros: Diesel's lock modes cannot be named
//!   in a generic bound): a read a rule depends on locks its row in a PostgreSQL write
//!   transaction; SQLite's one writer holds the whole database already;
//! - `take_turns` and `take_turns_named`: an advisory lock on PostgreSQL, nothing on SQLite;
//! - `set_stock_row`: a prepared statement on SQLite, the hottest write there;
//! - the outbox and the feed (`EventWriter`, `EventReader`), each backend's own: how an
//!   event's id comes to follow the order of commits differs.

mod catalogue;
mod idempotency;
mod inventory;
mod keys;
mod orders;
mod webhooks;

use super::{Tx, row_for_no_key_update, row_for_update};

/// The namespaces of the locks a write transaction takes so that writers of the same thing take
/// turns (on PostgreSQL, the first key of the two-key advisory lock).
#[derive(Debug, Clone, Copy)]
#[repr(i32)]
pub(crate) enum LockSpace {
    /// One lock per idempotency key (its hash), held by the request using it.
    IdempotencyKey = 0x7065_7402,
    /// One lock for bootstrapping the first admin key.
    Bootstrap = 0x7065_7403,
}

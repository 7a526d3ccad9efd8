//! The repository traits on one transaction of either backend: the statements, written once.
//!
//! This module is compiled once for each backend (`sqlite/tx.rs` and `postgres/tx.rs` declare
//! it with `#[path]`), for that backend's transaction type, `Tx`. What truly differs between
//! the two is a method of `Tx` each backend defines for itself:
//! - `page`: how a page's `LIMIT` is written (on SQLite as text, so cached plans stay valid);
//! - `row_for_update!` and `row_for_no_key_update!` (macros: Diesel's lock modes cannot be named
//!   in a generic bound): a read a rule depends on locks its row in a PostgreSQL write
//!   transaction; SQLite's one writer holds the whole database already;
//! - `take_turns`: an advisory lock on PostgreSQL, nothing on SQLite;
//! - `set_stock_row`: a prepared statement on SQLite, the hottest write there;
//! - `insert_movement_rows`: the stock ledger's rows, held back with the other writes on
//!   PostgreSQL;
//! - the outbox and the feed (`EventWriter`, `EventReader`), each backend's own: how an
//!   event's id comes to follow the order of commits differs (`events.rs` reads the table).

mod catalogue;
pub(crate) mod events;
mod holds;
mod idempotency;
mod inventory;
mod keys;
mod ledger;
mod orders;
mod sessions;
mod webhooks;

use petstore_core::PetId;

use super::{Tx, row_for_no_key_update, row_for_update};

impl Tx<'_> {
    /// Forgets what is known of pet `pet`'s row (of every pet: `None`): a write is about to
    /// change it ([`KnownRows`](crate::known_rows::KnownRows)).
    pub(crate) fn forget_pet_row(&mut self, pet: Option<PetId>) {
        self.known().forget(pet);
    }
}

/// The namespaces of the locks a write transaction takes so that writers of the same thing take
/// turns (on PostgreSQL, the first key of the two-key advisory lock).
#[derive(Debug, Clone, Copy)]
#[repr(i32)]
pub(crate) enum LockSpace {
    /// One lock per idempotency key (its hash), taken by a create that looks its key up on
    /// its own (not in a burst that looked it up with others): creates with one key take
    /// turns, and the second finds the first's record.
    #[allow(
        dead_code,
        reason = "PostgreSQL's only; this module is compiled for SQLite too"
    )]
    IdempotencyKey = 0x7065_7402,
    /// One lock for bootstrapping the first admin key.
    Bootstrap = 0x7065_7403,
}

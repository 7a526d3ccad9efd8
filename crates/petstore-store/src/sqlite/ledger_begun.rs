//! Whether the stock ledger has begun (`ledger_opened` has its row), as the store last saw.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the stock ledger is known to have begun. Finishing an upgrade is never undone, so
/// once a transaction has seen the row, no later one asks again: a write's movements are then
/// one `INSERT` of their own rows, where an `INSERT … SELECT` from `ledger_opened` was one
/// statement per movement, each keeping a statement journal.
#[derive(Debug, Clone, Default)]
pub(crate) struct LedgerBegun(Arc<AtomicBool>);

impl LedgerBegun {
    /// Whether a transaction has seen the ledger begun.
    pub(crate) fn seen(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Notes that a transaction saw the ledger begun.
    pub(crate) fn saw(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

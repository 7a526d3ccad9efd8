//! What one write appended, for the shop's counters.

use std::sync::atomic::{AtomicU64, Ordering};

use petstore_core::{DomainEvent, EventListener};

/// The events of the shop's counters that one write appended in its last run: a write may
/// run again before its commit, so each run starts it afresh ([`Appended::new_run`]), and
/// [`Metrics::committed`](super::Metrics::committed) counts it once the write's commit is known. Counted from what the
/// domain appended, whichever door or handler made the write.
#[derive(Debug, Default)]
pub(crate) struct Appended {
    orders_placed: AtomicU64,
}

impl Appended {
    /// The orders the write's last run placed.
    pub(crate) fn orders_placed(&self) -> u64 {
        self.orders_placed.load(Ordering::Relaxed)
    }

    /// Forgets what an earlier run of the write appended.
    pub(crate) fn new_run(&self) {
        self.orders_placed.store(0, Ordering::Relaxed);
    }
}

impl EventListener for Appended {
    fn appended(&self, events: &[DomainEvent]) {
        let placed = events
            .iter()
            .filter(|event| matches!(event, DomainEvent::OrderPlaced(_)))
            .count();
        self.orders_placed
            .fetch_add(placed as u64, Ordering::Relaxed);
    }
}

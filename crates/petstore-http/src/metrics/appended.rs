//! What one write appended, for the shop's counters.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use chrono::TimeDelta;
use petstore_core::{DomainEvent, EventListener};

/// The events of the shop's counters that one write appended in its last run: a write may
/// run again before its commit, so each run starts it afresh ([`Appended::new_run`]), and
/// [`Metrics::committed`](super::Metrics::committed) counts it once the write's commit is known. Counted from what the
/// domain appended, whichever door or handler made the write.
#[derive(Debug, Default)]
pub(crate) struct Appended {
    orders_placed: AtomicU64,
    /// How late after its expiry each hold the write expired was ended.
    holds_ended_late: Mutex<Vec<TimeDelta>>,
}

impl Appended {
    /// The orders the write's last run placed.
    pub(crate) fn orders_placed(&self) -> u64 {
        self.orders_placed.load(Ordering::Relaxed)
    }

    /// How late after its expiry each hold the write's last run expired was ended.
    pub(crate) fn holds_ended_late(&self) -> Vec<TimeDelta> {
        self.late().clone()
    }

    /// Forgets what an earlier run of the write appended.
    pub(crate) fn new_run(&self) {
        self.orders_placed.store(0, Ordering::Relaxed);
        self.late().clear();
    }

    fn late(&self) -> std::sync::MutexGuard<'_, Vec<TimeDelta>> {
        self.holds_ended_late
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
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
        let late = events.iter().filter_map(|event| match event {
            DomainEvent::HoldExpired(hold) => hold.ended.map(|end| end.at - hold.expires_at),
            _ => None,
        });
        self.late().extend(late);
    }
}

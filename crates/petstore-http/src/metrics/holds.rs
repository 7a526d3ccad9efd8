//! The holds' metrics: how many are active and what they hold, how overdue the oldest is
//! (read from the database at each scrape, so they show a sweeper that stopped), and how late
//! after its expiry each hold this node swept was ended.

use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use petstore_core::HeldTotals;

/// The holds' metric handles, registered once.
#[derive(Debug)]
pub(crate) struct HoldMetrics {
    active: Gauge,
    held_units: Gauge,
    oldest_overdue: Gauge<f64, std::sync::atomic::AtomicU64>,
    lateness: Histogram,
}

impl HoldMetrics {
    /// The handles, registered in `registry`.
    pub(crate) fn registered(registry: &mut Registry) -> Self {
        let metrics = Self {
            active: Gauge::default(),
            held_units: Gauge::default(),
            oldest_overdue: Gauge::default(),
            // 1 ms to about 65 s, doubling.
            lateness: Histogram::new(exponential_buckets(0.001, 2.0, 17)),
        };
        registry.register(
            "holds_active",
            "Holds not yet ended, read from the database at each scrape",
            metrics.active.clone(),
        );
        registry.register(
            "holds_held_units",
            "Units set aside by the active holds, read at each scrape",
            metrics.held_units.clone(),
        );
        registry.register(
            "holds_oldest_overdue_seconds",
            "How long ago the oldest active hold's expiry came (0 when none is overdue), read \
             at each scrape: every node's sweeper ends a hold within --hold-sweep-ms and a second",
            metrics.oldest_overdue.clone(),
        );
        registry.register(
            "hold_expiry_lateness_seconds",
            "For each hold this node's sweeper ended: how long after its expiry",
            metrics.lateness.clone(),
        );
        metrics
    }

    /// What a scrape read of the holds at `now`.
    pub(crate) fn read(&self, totals: &HeldTotals, now: chrono::DateTime<chrono::Utc>) {
        self.active
            .set(i64::try_from(totals.holds).unwrap_or(i64::MAX));
        self.held_units
            .set(i64::try_from(totals.units).unwrap_or(i64::MAX));
        let overdue = totals
            .oldest_due
            .map_or(0.0, |due| seconds(now - due).max(0.0));
        self.oldest_overdue.set(overdue);
    }

    /// A committed sweep ended a hold `late` after its expiry.
    pub(crate) fn ended_late(&self, late: chrono::TimeDelta) {
        self.lateness.observe(seconds(late).max(0.0));
    }
}

/// `span` in seconds, to the microsecond.
fn seconds(span: chrono::TimeDelta) -> f64 {
    span.num_microseconds()
        .map_or(f64::MAX, |us| us as f64 / 1e6)
}

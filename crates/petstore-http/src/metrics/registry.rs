//! The metrics' definitions: each one's name, help text and type, registered once when a
//! [`Metrics`] is made. Kept apart from the counting and the scrape (`metrics.rs`), which only
//! update what is registered here.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::Mutex;

use super::{
    CONNECTION_ERRORS, Metrics, OutcomeLabels, ReasonLabels, RequestLabels, RouteLabels,
    VolumeLabels, WebhookLabels, holds, process, servers,
};

/// The build's version, as `--version` and `petstore_build_info` give it: the package's, with
/// the commit it was built from as semver build metadata (`0.1.0+1a2b3c4d5e6f`; `+unknown`
/// when built outside a git checkout: `build.rs`).
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "+", env!("PETSTORE_COMMIT"));

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: &'static str,
}

fn latency_histogram() -> Histogram {
    // 0.25 ms to about 4 s, doubling.
    Histogram::new(exponential_buckets(0.000_25, 2.0, 15))
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh set of metrics, registered.
    pub fn new() -> Self {
        let mut root = Registry::default();
        let registry = root.sub_registry_with_prefix("petstore");
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<RouteLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram as fn() -> Histogram,
        );
        let in_flight = Gauge::default();
        let pool_open = Gauge::default();
        let pool_idle = Gauge::default();
        let orders_placed = Counter::default();
        let rate_limited = Counter::default();
        let writes = Counter::default();
        let commits = Counter::default();
        let burst_reruns = Counter::default();
        let webhook_attempts = Family::<OutcomeLabels, Counter>::default();
        // 1 ms to about 16 s, doubling.
        let webhook_duration = Histogram::new(exponential_buckets(0.001, 2.0, 15));
        registry.register(
            "http_requests",
            "HTTP requests answered, by method, route pattern and status",
            requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "Time to answer an HTTP request, by method and route pattern",
            latency.clone(),
        );
        registry.register(
            "http_requests_in_flight",
            "HTTP requests being answered now",
            in_flight.clone(),
        );
        registry.register(
            "db_connections",
            "Database connections open: SQLite's writer and readers, or PostgreSQL's pool",
            pool_open.clone(),
        );
        registry.register(
            "db_connections_idle",
            "Database connections open and idle",
            pool_idle.clone(),
        );
        registry.register(
            "orders_placed",
            "Orders placed (replays of an idempotent request not counted)",
            orders_placed.clone(),
        );
        registry.register(
            "rate_limited_requests",
            "Requests refused by the rate limit",
            rate_limited.clone(),
        );
        registry.register(
            "db_writes",
            "Write transactions run by the store",
            writes.clone(),
        );
        registry.register(
            "db_commits",
            "Commits made by the store; writes / commits is the group commit's batch size",
            commits.clone(),
        );
        registry.register(
            "db_burst_reruns",
            "Bursts of writes that gave up their shared transaction (a write failed after \
             changes were kept, or met a lock) and ran each job again alone",
            burst_reruns.clone(),
        );
        registry.register(
            "webhook_delivery_attempts",
            "Webhook delivery attempts, by outcome (delivered: a 2xx answer; failed: anything else)",
            webhook_attempts.clone(),
        );
        // Each outcome from zero, so that a rate over it exists before the first attempt.
        for outcome in [
            petstore_core::DeliveryOutcome::Delivered,
            petstore_core::DeliveryOutcome::Failed,
        ] {
            drop(webhook_attempts.get_or_create(&OutcomeLabels {
                outcome: outcome.as_str(),
            }));
        }
        registry.register(
            "webhook_delivery_duration_seconds",
            "Time a webhook delivery attempt took, until the answer or the failure",
            webhook_duration.clone(),
        );
        registry.register(
            "http_connection_errors",
            "Connections closed on a client's mistake, by reason \
             (malformed: a request actix-http could not parse, answered 400 or 431 without a \
             body; timeout: a request not sent in time; io: the client broke the connection)",
            CONNECTION_ERRORS.clone(),
        );
        // Each reason from zero, so that a rate over it exists before the first mistake.
        for reason in ["malformed", "timeout", "io"] {
            drop(CONNECTION_ERRORS.get_or_create(&ReasonLabels { reason }));
        }
        let ready = Gauge::default();
        registry.register(
            "ready",
            "1 when the service's last readiness check found it ready, 0 when not (checked every \
             5 s by the service itself, and by each /readyz)",
            ready.clone(),
        );
        let webhook_lag = Family::<WebhookLabels, Gauge>::default();
        registry.register(
            "webhook_lag_events",
            "Per webhook subscription, feed positions between its cursor and the latest event \
             at the dispatcher's last look: 0 when it has caught up",
            webhook_lag.clone(),
        );
        let webhook_failed = Family::<WebhookLabels, Gauge>::default();
        registry.register(
            "webhook_failed_attempts",
            "Per webhook subscription, attempts failed since its last success, at the \
             dispatcher's last look: 0 once an attempt succeeds, and still counted while it \
             waits out a retry delay",
            webhook_failed.clone(),
        );
        let disk_free = Family::<VolumeLabels, Gauge>::default();
        registry.register(
            "db_disk_free_bytes",
            "Bytes free on the disk of the SQLite database file (no sample on PostgreSQL)",
            disk_free.clone(),
        );
        let build = Family::<BuildLabels, Gauge>::default();
        build
            .get_or_create(&BuildLabels { version: VERSION })
            .set(1);
        registry.register(
            "build_info",
            "The running build: always 1, with the version as a label",
            build,
        );
        let servers = servers::ServerMetrics::registered(registry);
        let holds = holds::HoldMetrics::registered(registry);
        root.register_collector(Box::new(process::ProcessCollector));
        Self {
            registry: root,
            requests,
            latency,
            in_flight,
            pool_open,
            pool_idle,
            orders_placed,
            rate_limited,
            writes,
            commits,
            burst_reruns,
            webhook_attempts,
            webhook_duration,
            ready,
            webhook_lag,
            webhook_failed,
            webhooks_seen: Mutex::default(),
            disk_free,
            servers,
            holds,
        }
    }
}

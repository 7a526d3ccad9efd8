//! Prometheus metrics at `GET /metrics`: the OpenMetrics text format to a scraper that asks
//! for it, the classic Prometheus text format (0.0.4) otherwise ([`Format`]).
//!
//! Requests are labelled by the route's pattern (`/v1/pets/{petId}`), never the raw path, so a
//! fuzzer or a scanner cannot create new series: anything unrouted is `unmatched`. Beside the
//! service's own `petstore_*` metrics: the standard `process_*` ones ([`process`]) and
//! `petstore_build_info`.

mod appended;
mod holds;
mod process;
mod registry;
mod servers;

pub(crate) use appended::Appended;
pub use registry::VERSION;

use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use petstore_store::{PoolState, ServerReads, WriterStats};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

// Labels borrow what they can: a request's method is one of a fixed set and its route is
// shared with its resource, so counting a request allocates nothing.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    route: Arc<str>,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VolumeLabels {
    volume: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabels {
    webhook: i64,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

/// Connections closed on a client's mistake, by reason. Counted by the logging layer
/// ([`crate::logging`]), of which a process has one: so the count is the process's, shared by
/// every [`Metrics`] (like the `process_*` figures).
static CONNECTION_ERRORS: LazyLock<Family<ReasonLabels, Counter>> = LazyLock::new(Family::default);

/// Counts a connection closed on a client's mistake (`malformed`, `timeout`, `io`).
pub fn count_connection_error(reason: &'static str) {
    CONNECTION_ERRORS
        .get_or_create(&ReasonLabels { reason })
        .inc();
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: &'static str,
    route: Arc<str>,
}

/// The service's metrics, shared by every worker.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram, fn() -> Histogram>,
    in_flight: Gauge,
    pool_open: Gauge,
    pool_idle: Gauge,
    orders_placed: Counter,
    rate_limited: Counter,
    writes: Counter,
    commits: Counter,
    burst_reruns: Counter,
    webhook_attempts: Family<OutcomeLabels, Counter>,
    webhook_duration: Histogram,
    ready: Gauge,
    webhook_lag: Family<WebhookLabels, Gauge>,
    webhook_failed: Family<WebhookLabels, Gauge>,
    /// The subscriptions the webhook families have series for, so that a deleted one's go.
    webhooks_seen: Mutex<Vec<i64>>,
    disk_free: Family<VolumeLabels, Gauge>,
    servers: servers::ServerMetrics,
    holds: holds::HoldMetrics,
}

/// The metric handles one route has used, by method and status: a counter and a histogram
/// share their values with the families' (they are handles), so counting through them is
/// counting in the families, without hashing the labels again for each request.
#[derive(Debug, Default)]
pub struct RouteMetrics(Mutex<Vec<RouteHandles>>);

impl RouteMetrics {
    /// Methods and statuses kept per route, at most; any others go through the families.
    const MAX: usize = 32;
}

#[derive(Debug)]
struct RouteHandles {
    method: &'static str,
    status: u16,
    requests: Counter,
    latency: Histogram,
}

impl RouteHandles {
    /// Counts a request that took `seconds`.
    fn count(&self, seconds: f64) {
        self.requests.inc();
        self.latency.observe(seconds);
    }
}

/// Counts a request as in flight until dropped (also when its handler panics or the client goes).
#[derive(Debug)]
pub struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

impl Metrics {
    /// What the last readiness check found.
    pub fn readiness(&self, ready: bool) {
        self.ready.set(i64::from(ready));
    }

    /// Where the webhook dispatcher found the subscriptions: how far behind the feed each
    /// is, and how many attempts have failed since its last success.
    pub fn webhook_status(&self, statuses: &[petstore_core::DeliveryStatus]) {
        let mut seen = self
            .webhooks_seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let now: Vec<i64> = statuses.iter().map(|s| s.id.get()).collect();
        for gone in seen.iter().filter(|id| !now.contains(id)) {
            let labels = WebhookLabels { webhook: *gone };
            self.webhook_lag.remove(&labels);
            self.webhook_failed.remove(&labels);
        }
        for status in statuses {
            let labels = WebhookLabels {
                webhook: status.id.get(),
            };
            self.webhook_lag
                .get_or_create(&labels)
                .set(i64::try_from(status.lag).unwrap_or(i64::MAX));
            self.webhook_failed
                .get_or_create(&labels)
                .set(i64::from(status.failed_attempts));
        }
        *seen = now;
    }

    /// A request starts.
    pub fn request_started(&self) -> InFlight {
        self.in_flight.inc();
        InFlight(self.in_flight.clone())
    }

    /// A request was answered. `handles` are those its route has used before (its
    /// resource's, when it has one): the families are asked, hashing the labels, only the
    /// first time a route answers a method with a status.
    pub fn request_finished(
        &self,
        method: &'static str,
        route: &Arc<str>,
        handles: Option<&RouteMetrics>,
        status: u16,
        seconds: f64,
    ) {
        let mut known =
            handles.map(|handles| handles.0.lock().unwrap_or_else(PoisonError::into_inner));
        if let Some(found) = known.as_ref().and_then(|known| {
            known
                .iter()
                .find(|found| found.method == method && found.status == status)
        }) {
            found.count(seconds);
            return;
        }
        let looked_up = self.handles(method, route, status);
        looked_up.count(seconds);
        if let Some(known) = known.as_mut()
            && known.len() < RouteMetrics::MAX
        {
            known.push(looked_up);
        }
    }

    /// The handles of a request's labels, from the families.
    fn handles(&self, method: &'static str, route: &Arc<str>, status: u16) -> RouteHandles {
        let latency = self
            .latency
            .get_or_create(&RouteLabels {
                method,
                route: Arc::clone(route),
            })
            .clone();
        let requests = self
            .requests
            .get_or_create(&RequestLabels {
                method,
                route: Arc::clone(route),
                status,
            })
            .clone();
        RouteHandles {
            method,
            status,
            requests,
            latency,
        }
    }

    /// Counts what a committed write appended (its last run's events: `AppState::write`).
    pub(crate) fn committed(&self, appended: &Appended) {
        let placed = appended.orders_placed();
        if placed > 0 {
            self.orders_placed.inc_by(placed);
        }
        for late in appended.holds_ended_late() {
            self.holds.ended_late(late);
        }
    }

    /// What a scrape read of the holds at `now`.
    pub fn holds(&self, totals: &petstore_core::HeldTotals, now: chrono::DateTime<chrono::Utc>) {
        self.holds.read(totals, now);
    }

    /// A webhook delivery attempt ended.
    pub fn webhook_attempt(&self, outcome: petstore_core::DeliveryOutcome, seconds: f64) {
        self.webhook_attempts
            .get_or_create(&OutcomeLabels {
                outcome: outcome.as_str(),
            })
            .inc();
        self.webhook_duration.observe(seconds);
    }

    /// A request was refused by the rate limit.
    pub fn rate_limited(&self) {
        self.rate_limited.inc();
    }

    /// The metrics in `format`, with the store's state as it is now.
    pub fn render(
        &self,
        format: Format,
        pool: PoolState,
        writer: WriterStats,
        disk_free: Option<u64>,
        servers: &[ServerReads],
    ) -> String {
        self.servers.update(servers);
        if let Some(free) = disk_free {
            self.disk_free
                .get_or_create(&VolumeLabels { volume: "database" })
                .set(i64::try_from(free).unwrap_or(i64::MAX));
        }
        self.pool_open.set(i64::from(pool.connections));
        self.pool_idle.set(i64::from(pool.idle));
        // The store counts; these counters catch up with it.
        self.writes
            .inc_by(writer.writes.saturating_sub(self.writes.get()));
        self.commits
            .inc_by(writer.commits.saturating_sub(self.commits.get()));
        self.burst_reruns
            .inc_by(writer.reruns.saturating_sub(self.burst_reruns.get()));
        let mut text = String::new();
        if prometheus_client::encoding::text::encode(&mut text, &self.registry).is_err() {
            tracing::error!("the metrics could not be encoded");
        }
        match format {
            Format::OpenMetrics => text,
            Format::Prometheus => classic(&text),
        }
    }
}

/// The two text formats Prometheus scrapers read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0 (`application/openmetrics-text`), for scrapers that ask for it.
    OpenMetrics,
    /// The classic text format (`text/plain; version=0.0.4`), for everyone else: `curl`,
    /// `promtool check metrics`, older scrapers.
    Prometheus,
}

impl Format {
    /// The format an `Accept` header asks for: OpenMetrics only when it is named.
    pub fn negotiate(accept: Option<&str>) -> Self {
        match accept {
            Some(accept) if accept.contains("application/openmetrics-text") => Self::OpenMetrics,
            _ => Self::Prometheus,
        }
    }

    /// The response's content type.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Self::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// OpenMetrics text rewritten in the classic format. The two differ where this changes: a
/// counter's `HELP` and `TYPE` name its samples (`…_total`), not the family; there are no
/// `UNIT` lines, no `_created` samples and no `# EOF`; `info` is a gauge.
fn classic(openmetrics: &str) -> String {
    let mut counters: Vec<&str> = Vec::new();
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ")
            && let Some(name) = rest.strip_suffix(" counter")
        {
            counters.push(name);
        }
    }
    let mut text = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(rest) = line
            .strip_prefix("# HELP ")
            .or_else(|| line.strip_prefix("# TYPE "))
        {
            let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            let kind = &line[..7];
            let tail = if kind == "# TYPE " && tail == "info" {
                "gauge"
            } else {
                tail
            };
            if counters.contains(&name) {
                text.push_str(&format!("{kind}{name}_total {tail}\n"));
            } else {
                text.push_str(&format!("{kind}{name} {tail}\n"));
            }
            continue;
        }
        let sample = line.split(['{', ' ']).next().unwrap_or_default();
        if sample.ends_with("_created")
            && counters
                .iter()
                .any(|c| sample.strip_suffix("_created") == Some(c))
        {
            continue;
        }
        text.push_str(line);
        text.push('\n');
    }
    text
}

//! The database servers' metrics on a node with read standbys: the reads each served, and per
//! standby whether it is up, whether the primary's commits wait for it, and its lag, as the
//! store last saw them.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use petstore_store::ServerReads;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabels {
    server: String,
}

/// The servers' metric handles, registered once.
#[derive(Debug, Default)]
pub(crate) struct ServerMetrics {
    reads: Family<ServerLabels, Counter>,
    up: Family<ServerLabels, Gauge>,
    synchronous: Family<ServerLabels, Gauge>,
    lag: Family<ServerLabels, Gauge>,
}

impl ServerMetrics {
    /// The handles, registered in `registry`.
    pub(crate) fn registered(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        registry.register(
            "db_reads",
            "Reads served, by database server (primary, replica-<n>), on a node with read \
             standbys (no series without)",
            metrics.reads.clone(),
        );
        registry.register(
            "db_replica_up",
            "Per read standby: 1 when its last probe found it replaying this primary's \
             timeline, else 0",
            metrics.up.clone(),
        );
        registry.register(
            "db_replica_synchronous",
            "Per read standby: 1 when it is up and the primary's commits wait for it, so that \
             reads of the latest state ask the primary nothing, else 0",
            metrics.synchronous.clone(),
        );
        registry.register(
            "db_replica_lag_bytes",
            "Per read standby: bytes of the primary's write-ahead log it had yet to replay, \
             as last seen (no sample while it is down)",
            metrics.lag.clone(),
        );
        metrics
    }

    /// Brings the series up to what the store reports of `servers`.
    pub(crate) fn update(&self, servers: &[ServerReads]) {
        for server in servers {
            let labels = ServerLabels {
                server: server.server.clone(),
            };
            let reads = self.reads.get_or_create(&labels);
            reads.inc_by(server.reads.saturating_sub(reads.get()));
            if let Some(up) = server.up {
                self.up.get_or_create(&labels).set(i64::from(up));
            }
            if let Some(synchronous) = server.synchronous {
                self.synchronous
                    .get_or_create(&labels)
                    .set(i64::from(synchronous));
            }
            match (server.up, server.lag_bytes) {
                (None, _) => {}
                (Some(_), Some(lag)) => {
                    self.lag
                        .get_or_create(&labels)
                        .set(i64::try_from(lag).unwrap_or(i64::MAX));
                }
                // Not known (down, or on another timeline): no sample, not a stale one.
                (Some(_), None) => {
                    self.lag.remove(&labels);
                }
            }
        }
    }
}

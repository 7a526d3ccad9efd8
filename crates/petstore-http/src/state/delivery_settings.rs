//! How the webhook dispatcher (`delivery/`) delivers, which the state carries to it.

use std::time::Duration;

use petstore_core::RetryPolicy;

/// How deliveries are made; `petstore serve` sets it from its flags.
#[derive(Debug, Clone)]
pub struct DeliverySettings {
    /// Whether subscriptions may target loopback, private and other non-public addresses
    /// (off by default: see `docs/security.md`).
    pub allow_private_targets: bool,
    /// The delays between attempts at an event.
    pub retry: RetryPolicy,
    /// How long one attempt may take, connecting included.
    pub timeout: Duration,
    /// How often the dispatcher looks for due subscriptions.
    pub poll: Duration,
    /// How many subscriptions are drained at once, at most: each holds a database
    /// connection while it reads, and the pool is shared with requests.
    pub concurrency: usize,
    /// How long a node's claim on a subscription lasts without renewal.
    pub lease: Duration,
}

impl Default for DeliverySettings {
    fn default() -> Self {
        Self {
            allow_private_targets: false,
            retry: RetryPolicy::default(),
            timeout: Duration::from_secs(10),
            poll: Duration::from_millis(500),
            concurrency: 8,
            lease: Duration::from_secs(30),
        }
    }
}

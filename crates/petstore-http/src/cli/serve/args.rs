//! `petstore serve`'s flags, each with its `PETSTORE_*` environment twin.

use std::num::NonZeroU32;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use petstore_core::{Currency, HoldLives, RetryPolicy};

use crate::app::DEFAULT_RATE;
use crate::cli::{DatabaseArgs, values};
use crate::delivery::DeliverySettings;

/// `petstore serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// The database.
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// A TOML file of these settings, each under its flag's name without the dashes
    /// (`db-wait-ms = 2000`); a flag or an environment variable wins over the file.
    #[arg(long, env = "PETSTORE_CONFIG")]
    pub config: Option<PathBuf>,
    /// Print the settings in effect (from flags, the environment, the config file and the
    /// defaults; passwords masked) as TOML, and exit.
    #[arg(long)]
    pub print_config: bool,
    /// The address to listen on.
    #[arg(long, env = "PETSTORE_BIND", default_value = "127.0.0.1:8080", value_parser = values::listen_address)]
    pub bind: String,
    /// Serve HTTPS (HTTP/2 or HTTP/1.1, by ALPN) with this PEM certificate chain, the
    /// server's own certificate first; read again on SIGHUP. Needs --tls-key.
    #[arg(long, env = "PETSTORE_TLS_CERT", value_parser = values::certificates_file)]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert's certificate; read again with it on SIGHUP.
    #[arg(long, env = "PETSTORE_TLS_KEY", value_parser = values::private_key_file)]
    pub tls_key: Option<PathBuf>,
    /// Where a first start (no key in the database, no PETSTORE_BOOTSTRAP_ADMIN_KEY) writes
    /// the admin key it creates, readable by the service's user only; never to the log.
    /// Default: beside a SQLite database (`petstore.db.admin-key`); on PostgreSQL,
    /// `petstore-admin-key` in the working directory.
    #[arg(long, env = "PETSTORE_ADMIN_KEY_FILE", value_parser = values::file_in_a_folder)]
    pub admin_key_file: Option<PathBuf>,
    /// Worker threads serving HTTP (default: one per core).
    #[arg(long, env = "PETSTORE_WORKERS", value_parser = at_least_one())]
    pub workers: Option<usize>,
    /// The currency the shop prices in (an ISO 4217 code): chosen by the first start on a
    /// database and kept; a start naming another is refused. Prices are integers of its minor
    /// unit.
    #[arg(long, env = "PETSTORE_CURRENCY", default_value = "EUR", value_parser = values::currency)]
    pub currency: Currency,
    /// The largest request body accepted, in bytes.
    #[arg(long, env = "PETSTORE_MAX_BODY_BYTES", default_value_t = 16 * 1024)]
    pub max_body_bytes: usize,
    /// How long a request waits for a database connection before 503, in milliseconds.
    #[arg(long, env = "PETSTORE_DB_WAIT_MS", default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    pub db_wait_ms: u64,
    /// An origin (`https://shop.example.com`) whose web pages may call the API from a browser
    /// (CORS); repeat it for several, or list them comma-separated in the environment. None
    /// by default: browsers then let no other origin's page read an answer.
    #[arg(
        long = "cors-origin",
        env = "PETSTORE_CORS_ORIGINS",
        value_delimiter = ',',
        value_parser = values::origin
    )]
    pub cors_origins: Vec<String>,
    /// An OpenTelemetry collector's OTLP/HTTP address (`http://127.0.0.1:4318`) to export
    /// traces to: a span per request, with children for its store call and for each webhook
    /// delivery attempt, joined to the caller's `traceparent`. Off by default.
    #[arg(long, env = "PETSTORE_OTLP_ENDPOINT", value_parser = values::http_endpoint)]
    pub otlp_endpoint: Option<String>,
    /// How long a request's work on PostgreSQL may take in all, in milliseconds, whatever the
    /// network does: past it the request is answered 503 (`outcome_unknown` for a write, which
    /// may still commit when the network comes back). Above `--db-wait-ms`.
    #[arg(long, env = "PETSTORE_DB_TIMEOUT_MS", default_value_t = 5_000)]
    pub db_timeout_ms: u64,
    /// A hot standby of the PostgreSQL primary that may serve reads (a libpq URL of the same
    /// database, with its own TLS settings); repeat it for several, or list them separated
    /// by spaces in the environment (a URL may hold commas: several hosts). A read still
    /// sees every write acknowledged before it was sent (docs/deployment.md, "Read
    /// standbys"). None by default: the primary serves every read.
    #[arg(
        long = "database-replica",
        env = "PETSTORE_DATABASE_REPLICAS",
        value_delimiter = ' ',
        value_parser = values::postgres_url
    )]
    pub database_replicas: Vec<String>,
    /// With read standbys: the most a read waits for one to have replayed far enough, in
    /// milliseconds, before the primary serves it.
    #[arg(long, env = "PETSTORE_REPLICA_WAIT_MS", default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub replica_wait_ms: u64,
    /// How long a client may take to send a request's body once its headers are in, in
    /// milliseconds; past it the request is answered 408 and its connection closed.
    #[arg(long, env = "PETSTORE_BODY_TIMEOUT_MS", default_value_t = 10_000)]
    pub body_timeout_ms: u64,
    /// Connections open at once, at most, over all workers; more wait to be accepted, so one
    /// client cannot use up the process's file descriptors. Default: 4096, or fewer when the
    /// open-file limit (`ulimit -n`) leaves less room beside the database's and the logs'
    /// files.
    #[arg(long, env = "PETSTORE_MAX_CONNECTIONS", value_parser = at_least_one())]
    pub max_connections: Option<usize>,
    /// How long a client may take to send its request headers, in milliseconds.
    #[arg(long, env = "PETSTORE_CLIENT_TIMEOUT_MS", default_value_t = 5000)]
    pub client_timeout_ms: u64,
    /// How long an idle keep-alive connection stays open, in seconds.
    #[arg(long, env = "PETSTORE_KEEP_ALIVE_SECS", default_value_t = 5)]
    pub keep_alive_secs: u64,
    /// Requests per second per API key (per client address for requests without a valid key).
    #[arg(long, env = "PETSTORE_RATE_LIMIT", default_value_t = DEFAULT_RATE)]
    pub rate_limit: NonZeroU32,
    /// Requests a key may make at once before the per-second rate applies (default: the rate).
    #[arg(long, env = "PETSTORE_RATE_LIMIT_BURST")]
    pub rate_limit_burst: Option<NonZeroU32>,
    /// How long in-flight requests may finish after SIGTERM, in seconds.
    #[arg(long, env = "PETSTORE_SHUTDOWN_TIMEOUT_SECS", default_value_t = 30)]
    pub shutdown_timeout_secs: u64,
    /// How long a node keeps accepting after SIGTERM, in seconds, with `/readyz` answering 503
    /// from the signal on: the time a balancer or an orchestrator (Kubernetes' endpoints) takes
    /// to stop sending to it. 0 stops accepting at once.
    #[arg(long, env = "PETSTORE_DRAIN_DELAY_SECS", default_value_t = 0)]
    pub drain_delay_secs: u64,
    /// How long a staff console session lasts unused, in seconds.
    #[arg(long, env = "PETSTORE_CONSOLE_IDLE_SECS", default_value_t = 1800, value_parser = clap::value_parser!(u32).range(1..))]
    pub console_idle_secs: u32,
    /// How long a staff console session lasts at most, used or not, in seconds.
    #[arg(long, env = "PETSTORE_CONSOLE_MAX_AGE_SECS", default_value_t = 43_200, value_parser = clap::value_parser!(u32).range(1..))]
    pub console_max_age_secs: u32,
    /// Webhook deliveries.
    #[command(flatten)]
    pub webhooks: WebhookArgs,
    /// Holds.
    #[command(flatten)]
    pub holds: HoldArgs,
}

/// How long holds live, and how often each node ends those past their expiry.
#[derive(Debug, Clone, Args)]
pub struct HoldArgs {
    /// The life of a hold whose request gives no `ttlSeconds`, in seconds.
    #[arg(long, env = "PETSTORE_HOLD_TTL", default_value_t = 600, value_parser = clap::value_parser!(u32).range(1..=86_400))]
    pub hold_ttl: u32,
    /// The longest life a request may ask for, in seconds (at most a day).
    #[arg(long, env = "PETSTORE_HOLD_TTL_MAX", default_value_t = 1800, value_parser = clap::value_parser!(u32).range(1..=86_400))]
    pub hold_ttl_max: u32,
    /// How often this node ends the holds whose expiry has come, in milliseconds: a hold is
    /// ended within this and a second of its expiry while any node runs.
    #[arg(long, env = "PETSTORE_HOLD_SWEEP_MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub hold_sweep_ms: u64,
}

impl HoldArgs {
    /// The lives as the use cases take them; a default above the longest is refused.
    pub fn lives(&self) -> anyhow::Result<HoldLives> {
        HoldLives::new(
            Duration::from_secs(self.hold_ttl.into()),
            Duration::from_secs(self.hold_ttl_max.into()),
        )
        .map_err(|_| {
            anyhow::anyhow!(
                "--hold-ttl ({}) must be at most --hold-ttl-max ({})",
                self.hold_ttl,
                self.hold_ttl_max
            )
        })
    }
}

/// How webhooks are delivered.
#[derive(Debug, Clone, Args)]
pub struct WebhookArgs {
    /// Let webhooks target loopback, private, link-local and other non-public addresses
    /// (off: such targets are refused, see docs/security.md).
    #[arg(long, env = "PETSTORE_WEBHOOK_ALLOW_PRIVATE_TARGETS")]
    pub webhook_allow_private_targets: bool,
    /// The wait before the first retry of a failed delivery, in milliseconds; it doubles
    /// with each further failure.
    #[arg(long, env = "PETSTORE_WEBHOOK_FIRST_RETRY_MS", default_value_t = 5_000)]
    pub webhook_first_retry_ms: u64,
    /// The longest wait between two attempts, in milliseconds.
    #[arg(
        long,
        env = "PETSTORE_WEBHOOK_MAX_RETRY_DELAY_MS",
        default_value_t = 3_600_000
    )]
    pub webhook_max_retry_delay_ms: u64,
    /// How long one delivery attempt may take, in milliseconds.
    #[arg(long, env = "PETSTORE_WEBHOOK_TIMEOUT_MS", default_value_t = 10_000)]
    pub webhook_timeout_ms: u64,
    /// How often the dispatcher looks for deliveries to make, in milliseconds.
    #[arg(long, env = "PETSTORE_WEBHOOK_POLL_MS", default_value_t = 500)]
    pub webhook_poll_ms: u64,
    /// How many subscriptions receive deliveries at once, at most.
    #[arg(long, env = "PETSTORE_WEBHOOK_CONCURRENCY", default_value_t = 8)]
    pub webhook_concurrency: usize,
    /// A PEM file of CA certificates to trust for https receivers, besides the system's.
    #[arg(long, env = "PETSTORE_WEBHOOK_CA_FILE", value_parser = values::certificates_file)]
    pub webhook_ca_file: Option<PathBuf>,
    /// How long a node keeps sending a subscription's events before another may take over,
    /// in milliseconds: a node renews its lease while it sends, so this is how long a dead
    /// node's subscriptions wait. Longer than an attempt's timeout.
    #[arg(long, env = "PETSTORE_WEBHOOK_LEASE_MS", default_value_t = 30_000)]
    pub webhook_lease_ms: u64,
}

impl WebhookArgs {
    /// The delivery settings these arguments describe.
    pub fn settings(&self) -> DeliverySettings {
        DeliverySettings {
            allow_private_targets: self.webhook_allow_private_targets,
            retry: RetryPolicy {
                first_retry: Duration::from_millis(self.webhook_first_retry_ms.max(1)),
                max_delay: Duration::from_millis(self.webhook_max_retry_delay_ms.max(1)),
            },
            timeout: Duration::from_millis(self.webhook_timeout_ms.max(1)),
            poll: Duration::from_millis(self.webhook_poll_ms.max(1)),
            lease: Duration::from_millis(self.webhook_lease_ms.max(1)),
            concurrency: self.webhook_concurrency.max(1),
        }
    }
}

/// A count of which there must be at least one (`--workers`, `--max-connections`).
fn at_least_one() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::new().range(1..)
}

//! `petstore serve`: its flags, the first admin key (`admin_key.rs`), the connection cap, and
//! the server's life until a stop signal.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix_web::HttpServer;
use clap::Args;
use std::num::NonZeroU32;

use anyhow::{Context, anyhow};
use chrono::TimeDelta;
use petstore_core::{RetryPolicy, SessionLifetime, Settings, SystemClock};
use petstore_store::{AnyStore, Database, HEARTBEAT_EVERY};

mod admin_key;

use admin_key::{bootstrap_admin_key, default_key_file};

use super::signals::Signals;
use super::{DatabaseArgs, values};
use crate::app::{DEFAULT_RATE, HttpLimits, app};
use crate::auth::{RateLimits, random_bytes};
use crate::console::ConsoleSettings;
use crate::cors::CorsOrigins;
use crate::delivery::DeliverySettings;
use crate::state::AppState;
use crate::tls::{ServerCertificate, reload_on_hangup};
use crate::traces::Traces;

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
    /// How long a staff console session lasts unused, in seconds.
    #[arg(long, env = "PETSTORE_CONSOLE_IDLE_SECS", default_value_t = 1800, value_parser = clap::value_parser!(u32).range(1..))]
    pub console_idle_secs: u32,
    /// How long a staff console session lasts at most, used or not, in seconds.
    #[arg(long, env = "PETSTORE_CONSOLE_MAX_AGE_SECS", default_value_t = 43_200, value_parser = clap::value_parser!(u32).range(1..))]
    pub console_max_age_secs: u32,
    /// Webhook deliveries.
    #[command(flatten)]
    pub webhooks: WebhookArgs,
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

/// The most connections the service takes by default.
const MAX_CONNECTIONS: usize = 4096;

/// Open files the process keeps beside its clients' connections: the listener, standard
/// streams, the database (a SQLite file with its WAL and shared memory for each connection,
/// or a pool's sockets), webhook deliveries' sockets, and some room to spare.
fn files_beside_connections(database_connections: u32) -> usize {
    64 + 3 * database_connections as usize
}

/// How many connections to take at once: what the operator set, or [`MAX_CONNECTIONS`], or
/// fewer when the open-file limit leaves less room. A cap above the room would let idle
/// clients use up the descriptors the database needs ("Too many open files"). Said at start.
fn connection_cap(configured: Option<usize>, database_connections: u32) -> usize {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    let room = limit.map(|files| {
        usize::try_from(files)
            .unwrap_or(usize::MAX)
            .saturating_sub(files_beside_connections(database_connections))
            .max(1)
    });
    let cap = configured
        .unwrap_or_else(|| room.map_or(MAX_CONNECTIONS, |room| room.min(MAX_CONNECTIONS)));
    match (limit, room) {
        (Some(files), Some(room)) if cap > room => tracing::warn!(
            max_connections = cap,
            open_files_limit = files,
            "--max-connections is above what the open-file limit leaves for connections ({room}): raise the limit (ulimit -n, LimitNOFILE=) or lower the cap"
        ),
        (Some(files), _) => tracing::info!(
            max_connections = cap,
            open_files_limit = files,
            "connections capped"
        ),
        (None, _) => tracing::info!(max_connections = cap, "connections capped"),
    }
    cap
}

/// Says every [`HEARTBEAT_EVERY`] that this node serves, with the migrations it knows, so
/// that `petstore migrate --finish` can tell whether an older node still serves. A failure
/// is logged once, and the beats go on.
async fn heartbeats(store: AnyStore, node: std::rc::Rc<str>) {
    let mut failing = false;
    loop {
        let (beating, name) = (store.clone(), node.to_string());
        let beat = actix_web::rt::task::spawn_blocking(move || beating.heartbeat(&name, true));
        match beat.await {
            Ok(Ok(())) => failing = false,
            Ok(Err(error)) if !failing => {
                failing = true;
                tracing::warn!(%error, "the node's heartbeat could not be written");
            }
            _ => {}
        }
        actix_web::rt::time::sleep(HEARTBEAT_EVERY).await;
    }
}

/// A count of which there must be at least one (`--workers`, `--max-connections`).
fn at_least_one() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::new().range(1..)
}

/// `petstore serve`: runs until SIGINT or SIGTERM (listened for by `signals` since the
/// process began), then lets in-flight requests finish and leaves the database complete.
pub async fn serve(args: ServeArgs, signals: Signals) -> anyhow::Result<()> {
    let (stop_signal, hangups) = signals.split();
    // Everything the settings make that can fail comes first: a start that cannot serve (the
    // port is taken, a certificate does not match its key) must not create a database or
    // mint the one-time admin key it would then lose.
    let listener = std::net::TcpListener::bind(&args.bind)
        .with_context(|| format!("cannot listen on {}", args.bind))?;
    let certificate = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(ServerCertificate::load(cert, key)?),
        _ => None,
    };
    let tls = crate::delivery::tls_config(args.webhooks.webhook_ca_file.as_deref())
        .map_err(|e| anyhow!("webhook TLS: {e}"))?;
    let cors = CorsOrigins::new(&args.cors_origins).map_err(|e| anyhow!("--cors-origin: {e}"))?;
    let traces = match &args.otlp_endpoint {
        Some(endpoint) => {
            let traces = Traces::start(endpoint).map_err(|e| anyhow!("--otlp-endpoint: {e}"))?;
            tracing::info!(%endpoint, "exporting traces over OTLP");
            Some(traces)
        }
        None => None,
    };
    let mut config = args.database.store_config();
    // One bound for every wait a write makes: for the writer connection, and for another
    // process's lock on the file (SQLite's busy timeout), which until now waited 5 s.
    config.connection_timeout = Duration::from_millis(args.db_wait_ms);
    config.busy_timeout = config.connection_timeout;
    // The server cancels a statement before the request gives up on it: a statement it
    // cancelled is rolled back, and its write is answered as not made, not as unknown.
    let deadline = Duration::from_millis(args.db_timeout_ms.max(args.db_wait_ms + 500));
    config.statement_timeout = deadline * 4 / 5;
    config.deadline = deadline;
    if !args.database_replicas.is_empty() {
        if !matches!(config.database, Database::Postgres(_)) {
            return Err(anyhow!(
                "--database-replica needs a PostgreSQL --database: a SQLite file has no standbys"
            ));
        }
        config.replicas = args.database_replicas.clone();
        config.replica_wait = Duration::from_millis(args.replica_wait_ms);
    }
    let store = AnyStore::open(&config)?;
    let settled = store.clone();
    let settings = Settings {
        allow_private_webhook_targets: args.webhooks.webhook_allow_private_targets,
    };
    let mut state = AppState::with_settings(store, Arc::new(SystemClock), settings)
        .context("cannot start the store's threads")?
        .with_delivery(args.webhooks.settings());
    if let Some(traces) = &traces {
        state = state.with_traces(traces.clone());
    }
    let key_file = args
        .admin_key_file
        .clone()
        .unwrap_or_else(|| default_key_file(&args.database.database));
    bootstrap_admin_key(&state, &key_file).await?;
    if cors.is_on() {
        tracing::info!(origins = ?args.cors_origins, "browser pages of these origins may call the API");
    }
    let limits = HttpLimits {
        cors,
        max_body_bytes: args.max_body_bytes,
        body_timeout: Duration::from_millis(args.body_timeout_ms.max(1)),
        rate: RateLimits::new(
            args.rate_limit,
            args.rate_limit_burst.unwrap_or(args.rate_limit),
        ),
        console: ConsoleSettings {
            lifetime: SessionLifetime {
                idle: TimeDelta::seconds(args.console_idle_secs.into()),
                absolute: TimeDelta::seconds(args.console_max_age_secs.into()),
            },
        },
    };
    // Build the document once, before the workers need it.
    let _ = crate::openapi::document();

    let stopping = state.clone();
    let mut server = HttpServer::new(move || app(state.clone(), limits.clone()))
        // Signals are handled below, so that open event streams can be ended first.
        .disable_signals()
        .client_request_timeout(Duration::from_millis(args.client_timeout_ms))
        .keep_alive(Duration::from_secs(args.keep_alive_secs))
        .shutdown_timeout(args.shutdown_timeout_secs);
    let workers = args
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
    let max_connections = connection_cap(args.max_connections, config.readers);
    // actix bounds connections per worker.
    server = server
        .workers(workers)
        .max_connections(max_connections.div_ceil(workers).max(1));
    let server = match &certificate {
        Some(certificate) => server.listen_rustls_0_23(listener, certificate.server_config()?),
        None => server.listen(listener),
    }
    .with_context(|| format!("cannot listen on {}", args.bind))?;
    actix_web::rt::spawn(reload_on_hangup(certificate, hangups));
    for address in server.addrs() {
        let scheme = if args.tls_cert.is_some() {
            "https"
        } else {
            "http"
        };
        tracing::info!(%address, scheme, database = %args.database.database, "petstore listening");
    }
    let server = server.run();
    let handle = server.handle();
    // Names this process among the nodes sharing the database (webhook leases).
    let node: std::rc::Rc<str> = format!(
        "{}-{:x}",
        std::process::id(),
        u64::from_le_bytes(random_bytes()?[..8].try_into()?)
    )
    .into();
    actix_web::rt::spawn(heartbeats(settled.clone(), node.clone()));
    actix_web::rt::spawn(crate::delivery::run(stopping.clone(), tls, node.clone()));
    actix_web::rt::spawn(crate::changes::watch(stopping.clone()));
    actix_web::rt::spawn(crate::app::keep_readiness_current(stopping.clone()));
    actix_web::rt::spawn(async move {
        stop_signal.await;
        tracing::info!("stopping: finishing in-flight requests");
        stopping.begin_shutdown();
        handle.stop(true).await;
    });
    server.await?;
    if let Some(traces) = traces {
        // The exporter's thread sends the last batch; nothing else is left to run.
        traces.finish();
    }
    // Gone, not merely silent: `migrate --finish` need not wait for this node's heartbeat to
    // age.
    if let Err(error) = settled.heartbeat(&node, false) {
        tracing::warn!(%error, "the node's heartbeat could not be removed");
    }
    // People copy a stopped service's SQLite file alone: it must hold every write.
    match settled.settle() {
        Ok(true) => {}
        Ok(false) => tracing::warn!(
            "the database's WAL could not be emptied (another process reads or writes it): copy the file with its -wal, or use `petstore backup`"
        ),
        Err(error) => tracing::warn!(%error, "the database's WAL could not be emptied"),
    }
    tracing::info!("stopped");
    Ok(())
}

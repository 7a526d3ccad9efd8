//! `petstore serve`: its flags, the first admin key (`admin_key.rs`), the connection cap, and
//! the server's life until a stop signal.

use std::sync::Arc;
use std::time::Duration;

use actix_web::HttpServer;

use anyhow::{Context, anyhow};
use chrono::TimeDelta;
use petstore_core::{Actor, SessionLifetime, Settings, SystemClock};
use petstore_store::{AnyStore, Database, HEARTBEAT_EVERY};

mod admin_key;
mod args;

use admin_key::{bootstrap_admin_key, default_key_file};
pub use args::{ServeArgs, WebhookArgs};

use super::signals::Signals;
use crate::app::{HttpLimits, app};
use crate::auth::{RateLimits, random_bytes};
use crate::console::ConsoleSettings;
use crate::cors::CorsOrigins;
use crate::state::AppState;
use crate::tls::{ServerCertificate, reload_on_hangup};
use crate::traces::Traces;

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

/// Where this process runs, as an operator names the machine or pod: `HOSTNAME` (set in
/// every pod), else the kernel's host name, else `unknown`.
fn host_name() -> String {
    let given = std::env::var("HOSTNAME").ok();
    let kernel = || std::fs::read_to_string("/proc/sys/kernel/hostname").ok();
    [given, kernel()]
        .into_iter()
        .flatten()
        .map(|name| name.trim().to_owned())
        .find(|name| !name.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// A node's name, `<host>:<port>/<pid>-<4 hex>`: where it runs, for `migrate --finish` and
/// the logs; the random part tells a restarted process from its predecessor of the same pid.
fn node_name(host: &str, port: u16) -> anyhow::Result<String> {
    let random = random_bytes()?;
    let tag = u16::from_le_bytes([random[0], random[1]]);
    Ok(format!("{host}:{port}/{}-{tag:04x}", std::process::id()))
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
    let hold_lives = args.holds.lives()?;
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
    // The open may take long (a server that does not answer, a file another process holds
    // locked): a stop asked for meanwhile ends the start at once, not when the open gives up.
    // What the open had begun is undone as a crash's would be: each migration and write is
    // one transaction. A thread of its own, not the runtime's blocking pool, whose end the
    // runtime would wait for on the way out.
    let mut stop_signal = Box::pin(stop_signal);
    let (opened, opening) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("database-open".into())
        .spawn({
            let config = config.clone();
            move || opened.send(AnyStore::open(&config))
        })
        .context("cannot start a thread to open the database")?;
    let store = match futures_util::future::select(opening, stop_signal.as_mut()).await {
        futures_util::future::Either::Left((opened, _)) => {
            opened.map_err(|_| anyhow!("the database open ended without an answer"))??
        }
        futures_util::future::Either::Right(((), _)) => {
            tracing::info!(database = %config.database, "stopped while the database was being opened");
            return Ok(());
        }
    };
    let currency = store
        .shop_currency(args.currency)
        .with_context(|| format!("cannot serve {}", config.database))?;
    let settled = store.clone();
    let settings = Settings {
        currency,
        allow_private_webhook_targets: args.webhooks.webhook_allow_private_targets,
        hold_lives,
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
    // Names this process among the nodes sharing the database (heartbeats, webhook leases).
    let port = server.addrs().first().map_or(0, std::net::SocketAddr::port);
    let node: std::rc::Rc<str> = node_name(&host_name(), port)?.into();
    for address in server.addrs() {
        let scheme = if args.tls_cert.is_some() {
            "https"
        } else {
            "http"
        };
        tracing::info!(%address, scheme, database = %args.database.database, node = %node, "petstore listening");
    }
    let server = server.run();
    let handle = server.handle();
    actix_web::rt::spawn(heartbeats(settled.clone(), node.clone()));
    let dispatcher = stopping.acting_as(Actor::chore("webhooks"));
    actix_web::rt::spawn(crate::delivery::run(dispatcher, tls, node.clone()));
    actix_web::rt::spawn(crate::changes::watch(stopping.clone()));
    let sweeper = stopping.acting_as(Actor::chore("holds"));
    let every = Duration::from_millis(args.holds.hold_sweep_ms);
    actix_web::rt::spawn(crate::sweeper::run(sweeper, every));
    actix_web::rt::spawn(crate::app::keep_readiness_current(stopping.clone()));
    let drain_delay = Duration::from_secs(args.drain_delay_secs);
    actix_web::rt::spawn(async move {
        stop_signal.await;
        stopping.begin_shutdown();
        if drain_delay > Duration::ZERO {
            tracing::info!(
                ?drain_delay,
                "stopping: not ready, still accepting while balancers notice"
            );
            actix_web::rt::time::sleep(drain_delay).await;
        }
        tracing::info!("stopping: finishing in-flight requests");
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

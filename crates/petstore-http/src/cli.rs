//! The `petstore` command line: flags with environment twins (the flag wins).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix_web::HttpServer;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::num::NonZeroU32;

use anyhow::{Context, anyhow};
use petstore_core::{
    Always, Bootstrap, Caller, KeyId, KeyQuery, KeySecret, Name, NewApiKey, PageSize, RetryPolicy,
    Role, Service, Settings, SystemClock,
};
use petstore_store::{AnyStore, Database, Durability, StoreConfig};

use crate::app::{DEFAULT_RATE, HttpLimits, app};
use crate::auth::{RateLimits, generate_secret, random_bytes};
use crate::cors::CorsOrigins;
use crate::delivery::DeliverySettings;
use crate::state::AppState;
use crate::traces::Traces;

/// The pet store service: a JSON HTTP API under /v1 on an embedded SQLite database or on
/// PostgreSQL.
#[derive(Debug, Parser)]
#[command(name = "petstore", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Log format.
    #[arg(long, env = "PETSTORE_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,
}

/// The log formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start the HTTP service (creating and migrating the database if needed).
    // Boxed: the service's flags outweigh every other command's by far.
    Serve(Box<ServeArgs>),
    /// Create the database if needed, apply pending migrations, and exit.
    Migrate(DatabaseArgs),
    /// Manage API keys directly in the database (works while the service runs).
    Keys {
        /// What to do with keys.
        #[command(subcommand)]
        action: KeysCommand,
        /// The database.
        #[command(flatten)]
        database: DatabaseArgs,
    },
    /// Print the OpenAPI document (what `GET /openapi.json` serves), for generating clients
    /// and linting without a running service.
    Openapi,
    /// Copy the whole database, as one consistent snapshot, into a new SQLite file: safe while
    /// the service runs, which goes on reading and writing. `petstore serve --database FILE`
    /// serves the copy as it is; `petstore copy --from FILE` restores it anywhere.
    Backup(BackupArgs),
    /// Copy everything from one database into another, empty one, of either backend: how a
    /// shop moves from SQLite to PostgreSQL (or back), and how a backup is restored.
    Copy(CopyArgs),
    /// Check a database: the backend's own integrity check, its migrations, and the service's
    /// invariants. Exits 0 when all hold, 1 with one line per violation.
    Check(DatabaseArgs),
}

/// `petstore backup`.
#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The database to back up.
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// The SQLite file to write; it must not exist.
    pub file: PathBuf,
}

/// `petstore copy`.
#[derive(Debug, Args)]
pub struct CopyArgs {
    /// The database to copy from: a SQLite file or a `postgres://` URL. It is only read.
    #[arg(long, env = "PETSTORE_COPY_FROM", value_parser = parse_database)]
    pub from: Database,
    /// The database to copy into (created if missing); it must hold no row.
    #[arg(long, env = "PETSTORE_COPY_TO", value_parser = parse_database)]
    pub to: Database,
}

/// `petstore keys …`.
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key and print it, and nothing else, on standard output.
    Create {
        /// What the key may do.
        #[arg(long, value_parser = role_parser())]
        role: Role,
        /// What the key is for.
        #[arg(long)]
        name: String,
    },
    /// List keys (never their secrets).
    List,
    /// Revoke a key by id.
    Revoke {
        /// The key's id.
        id: i64,
    },
}

/// The roles by name, so that `--help` and a wrong value list them.
fn role_parser() -> impl clap::builder::TypedValueParser<Value = Role> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Role::ALL.map(Role::as_str))
        .try_map(|text| text.parse::<Role>().map_err(|e| e.reason.into_owned()))
}

/// Where the database is.
#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// The database: a SQLite file (created if missing), or a PostgreSQL database as a
    /// `postgres://user@host:5432/name` URL (also `postgresql://`).
    #[arg(
        long,
        env = "PETSTORE_DATABASE",
        default_value = "petstore.db",
        value_parser = parse_database,
        global = true
    )]
    pub database: Database,
    /// Database connections: SQLite's readers (besides its one writer), or the size of
    /// PostgreSQL's pool, which reads and writes share. Default: 4 on SQLite, 16 on PostgreSQL.
    #[arg(long, env = "PETSTORE_DB_CONNECTIONS", global = true)]
    pub db_connections: Option<u32>,
    /// When a commit is durable: `full` survives power loss, `normal` is faster and survives
    /// a crash of the process.
    #[arg(long, env = "PETSTORE_DURABILITY", value_enum, default_value_t = DurabilityArg::Full, global = true)]
    pub durability: DurabilityArg,
}

/// `--durability`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DurabilityArg {
    /// `synchronous=FULL`.
    Full,
    /// `synchronous=NORMAL`.
    Normal,
}

/// `petstore serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// The database.
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// The address to listen on.
    #[arg(long, env = "PETSTORE_BIND", default_value = "127.0.0.1:8080")]
    pub bind: String,
    /// Worker threads serving HTTP (default: one per core).
    #[arg(long, env = "PETSTORE_WORKERS")]
    pub workers: Option<usize>,
    /// The largest request body accepted, in bytes.
    #[arg(long, env = "PETSTORE_MAX_BODY_BYTES", default_value_t = 16 * 1024)]
    pub max_body_bytes: usize,
    /// How long a request waits for a database connection before 503, in milliseconds.
    #[arg(long, env = "PETSTORE_DB_WAIT_MS", default_value_t = 2000)]
    pub db_wait_ms: u64,
    /// An origin (`https://shop.example.com`) whose web pages may call the API from a browser
    /// (CORS); repeat it for several, or list them comma-separated in the environment. None
    /// by default: browsers then let no other origin's page read an answer.
    #[arg(
        long = "cors-origin",
        env = "PETSTORE_CORS_ORIGINS",
        value_delimiter = ','
    )]
    pub cors_origins: Vec<String>,
    /// An OpenTelemetry collector's OTLP/HTTP address (`http://127.0.0.1:4318`) to export
    /// traces to: a span per request, with children for its store call and for each webhook
    /// delivery attempt, joined to the caller's `traceparent`. Off by default.
    #[arg(long, env = "PETSTORE_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,
    /// How long a request's work on PostgreSQL may take in all, in milliseconds, whatever the
    /// network does: past it the request is answered 503 (`outcome_unknown` for a write, which
    /// may still commit when the network comes back). Above `--db-wait-ms`.
    #[arg(long, env = "PETSTORE_DB_TIMEOUT_MS", default_value_t = 5_000)]
    pub db_timeout_ms: u64,
    /// How long a client may take to send a request's body once its headers are in, in
    /// milliseconds; past it the request is answered 408 and its connection closed.
    #[arg(long, env = "PETSTORE_BODY_TIMEOUT_MS", default_value_t = 10_000)]
    pub body_timeout_ms: u64,
    /// Connections open at once, at most, over all workers; more wait to be accepted, so one
    /// client cannot use up the process's file descriptors. Default: 4096, or fewer when the
    /// open-file limit (`ulimit -n`) leaves less room beside the database's and the logs'
    /// files.
    #[arg(long, env = "PETSTORE_MAX_CONNECTIONS")]
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
    #[arg(long, env = "PETSTORE_WEBHOOK_CA_FILE")]
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

fn parse_database(text: &str) -> Result<Database, String> {
    if text.is_empty() {
        return Err("give a SQLite file or a postgres:// URL".to_owned());
    }
    Ok(Database::parse(text))
}

impl DatabaseArgs {
    /// The store configuration these arguments describe.
    pub fn store_config(&self) -> StoreConfig {
        let mut config = StoreConfig::for_database(self.database.clone());
        config.readers = self.db_connections.unwrap_or(match self.database {
            Database::Sqlite(_) => 4,
            Database::Postgres(_) => 16,
        });
        config.durability = match self.durability {
            DurabilityArg::Full => Durability::Full,
            DurabilityArg::Normal => Durability::Normal,
        };
        config
    }
}

/// `petstore openapi`.
pub fn print_openapi() -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(crate::openapi::document())?;
    println!("{text}");
    Ok(())
}

/// `petstore backup`: the rows per table on standard output, progress on standard error.
pub fn backup(args: &BackupArgs) -> anyhow::Result<()> {
    let copied = petstore_store::backup(&args.database.store_config(), &args.file, &mut progress())
        .with_context(|| format!("cannot back {} up", args.database.database))?;
    print_copied(&copied);
    tracing::info!(file = %args.file.display(), rows = copied.total(), "backup written and synced");
    Ok(())
}

/// `petstore copy`.
pub fn copy(args: &CopyArgs) -> anyhow::Result<()> {
    let from = StoreConfig::for_database(args.from.clone());
    let to = StoreConfig::for_database(args.to.clone());
    let copied = petstore_store::copy(&from, &to, &mut progress())
        .with_context(|| format!("cannot copy {} to {}", args.from, args.to))?;
    print_copied(&copied);
    tracing::info!(rows = copied.total(), to = %args.to, "copy committed");
    Ok(())
}

/// `petstore check`: `Ok(false)` when a violation was found (each printed on standard output).
pub fn check(args: &DatabaseArgs) -> anyhow::Result<bool> {
    let found = petstore_store::check(&args.store_config())
        .with_context(|| format!("cannot check {}", args.database))?;
    for violation in &found {
        println!("{violation}");
    }
    if found.is_empty() {
        tracing::info!(database = %args.database, "every check holds");
    }
    Ok(found.is_empty())
}

/// How a copy shows its progress: a bar per table on a terminal; otherwise (a file, a log
/// shipper) a log line per table, and every few seconds on a long one.
fn progress() -> Box<dyn FnMut(petstore_store::Progress)> {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        Box::new(progress_bars())
    } else {
        Box::new(progress_lines())
    }
}

fn progress_bars() -> impl FnMut(petstore_store::Progress) {
    use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
    use petstore_store::Progress;
    let style = ProgressStyle::with_template("{prefix:>20} [{bar:40}] {pos}/{len} rows")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    // Each table's bar on a line of its own, kept once it is full.
    let lines = MultiProgress::new();
    let mut bar: Option<ProgressBar> = None;
    move |step| match step {
        Progress::Table { name, rows } => {
            if let Some(done) = bar.take() {
                done.finish();
            }
            let next = lines.add(
                ProgressBar::new(rows)
                    .with_style(style.clone())
                    .with_prefix(name),
            );
            next.tick();
            bar = Some(next);
        }
        Progress::Rows { done, .. } => {
            if let Some(bar) = &bar {
                bar.set_position(done);
            }
        }
        Progress::Committing => {
            if let Some(done) = bar.take() {
                done.finish();
            }
            tracing::info!("every row written; committing");
        }
    }
}

fn progress_lines() -> impl FnMut(petstore_store::Progress) {
    use petstore_store::Progress;
    let mut last_said = std::time::Instant::now();
    move |step| match step {
        Progress::Table { name, rows } => {
            last_said = std::time::Instant::now();
            tracing::info!(table = name, rows, "copying");
        }
        // A long table says how far it is, every few seconds.
        Progress::Rows { name, done } if last_said.elapsed() >= Duration::from_secs(5) => {
            last_said = std::time::Instant::now();
            tracing::info!(table = name, done, "copying");
        }
        Progress::Rows { .. } => {}
        Progress::Committing => tracing::info!("every row written; committing"),
    }
}

fn print_copied(copied: &petstore_store::Copied) {
    for (table, rows) in &copied.0 {
        println!("{table} {rows}");
    }
}

/// `petstore migrate`.
pub fn migrate(args: &DatabaseArgs) -> anyhow::Result<()> {
    let applied = petstore_store::migrate(&args.store_config())?;
    if applied.is_empty() {
        tracing::info!(database = %args.database, "the database is up to date");
    }
    for version in applied {
        tracing::info!(%version, "migration applied");
    }
    Ok(())
}

/// A usable service from the first start: `PETSTORE_BOOTSTRAP_ADMIN_KEY` becomes an admin key
/// while no admin key is active; without it, a database with no key at all gets a new admin
/// key, printed once on standard error.
async fn bootstrap_admin_key(state: &AppState, format: LogFormat) -> anyhow::Result<()> {
    let configured = std::env::var("PETSTORE_BOOTSTRAP_ADMIN_KEY").ok();
    let from_env = configured.is_some();
    let secret = match configured {
        Some(text) => KeySecret::parse(&text)
            .map_err(|e| anyhow!("PETSTORE_BOOTSTRAP_ADMIN_KEY {}", e.reason))?,
        None => generate_secret()?,
    };
    let when = if from_env {
        Bootstrap::WhileNoAdminIsActive
    } else {
        Bootstrap::OnFirstStart
    };
    let shown = secret.reveal().to_owned();
    let created = state
        .write(move |shop| shop.keys().bootstrap(&secret, when))
        .await?;
    match created {
        Some(key) if from_env => {
            tracing::info!(key_id = %key.id, "PETSTORE_BOOTSTRAP_ADMIN_KEY is now an admin key");
        }
        Some(key) => {
            tracing::info!(key_id = %key.id, "created the first admin key");
            if format == LogFormat::Json {
                // Every line on standard error is a JSON object, this one too.
                tracing::warn!(
                    key_id = %key.id,
                    key = %shown,
                    "no API key existed, so this admin key was created; it is shown only this once"
                );
                return Ok(());
            }
            eprintln!(
                "\nNo API key existed, so an admin key was created. It is shown only this once:\n\n    {shown}\n\nUse it as `Authorization: Bearer <key>`; create more keys with `POST /v1/keys`\nor `petstore keys create`.\n"
            );
        }
        None => {}
    }
    Ok(())
}

/// `petstore keys …`.
pub fn keys(action: KeysCommand, database: &DatabaseArgs) -> anyhow::Result<()> {
    // Keys are managed in an existing database: a mistyped path is an error, not a new file.
    let mut config = database.store_config();
    config.create = false;
    let store = AnyStore::open(&config)?;
    let shop = Service::new(store);
    // The command line is the operator at the machine: it needs no key and may do everything.
    let operator = Caller::Operator;
    match action {
        KeysCommand::Create { role, name } => {
            let name = Name::parse(&name).map_err(|e| anyhow!("--name {}", e.reason))?;
            let secret = generate_secret()?;
            let key = shop
                .keys()
                .create(operator, NewApiKey { name, role }, &secret)?;
            tracing::info!(key_id = %key.id, role = %key.role, "key created");
            println!("{}", secret.reveal());
        }
        KeysCommand::List => {
            let mut after = None;
            let mut table = comfy_table::Table::new();
            table
                .load_preset(comfy_table::presets::NOTHING)
                .set_header(["id", "role", "prefix", "created", "state", "name"]);
            if let Some(ids) = table.column_mut(0) {
                ids.set_cell_alignment(comfy_table::CellAlignment::Right);
            }
            loop {
                let query = KeyQuery {
                    after,
                    limit: PageSize::MAX_PAGE,
                };
                let page = shop.keys().list(operator, &query)?;
                for key in &page.items {
                    let state = if key.revoked_at.is_some() {
                        "revoked"
                    } else {
                        "active"
                    };
                    table.add_row([
                        key.id.to_string(),
                        key.role.to_string(),
                        key.prefix.to_string(),
                        key.created_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                        state.to_owned(),
                        key.name.to_string(),
                    ]);
                }
                match page.next_after.map(KeyId::new) {
                    Some(Ok(next)) => after = Some(next),
                    _ => break,
                }
            }
            println!("{table}");
        }
        KeysCommand::Revoke { id } => {
            let id = KeyId::new(id).map_err(|e| anyhow!("key id {}", e.reason))?;
            shop.keys().revoke(operator, id, Always)?;
            tracing::info!(key_id = %id, "key revoked");
        }
    }
    Ok(())
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

/// `petstore serve`: runs until SIGINT or SIGTERM, then lets in-flight requests finish.
pub async fn serve(args: ServeArgs, format: LogFormat) -> anyhow::Result<()> {
    // Listening comes first: a start that cannot serve (the port is taken, the address is
    // wrong) must not create a database or mint the one-time admin key it would then lose.
    let listener = std::net::TcpListener::bind(&args.bind)
        .with_context(|| format!("cannot listen on {}", args.bind))?;
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
    let store = AnyStore::open(&config)?;
    let settings = Settings {
        allow_private_webhook_targets: args.webhooks.webhook_allow_private_targets,
    };
    let mut state = AppState::with_settings(store, Arc::new(SystemClock), settings)
        .context("cannot start the store's threads")?
        .with_delivery(args.webhooks.settings());
    let traces = match &args.otlp_endpoint {
        Some(endpoint) => {
            let traces = Traces::start(endpoint).map_err(|e| anyhow!("--otlp-endpoint: {e}"))?;
            tracing::info!(%endpoint, "exporting traces over OTLP");
            state = state.with_traces(traces.clone());
            Some(traces)
        }
        None => None,
    };
    bootstrap_admin_key(&state, format).await?;
    let tls = crate::delivery::tls_config(args.webhooks.webhook_ca_file.as_deref())
        .map_err(|e| anyhow!("webhook TLS: {e}"))?;
    let cors = CorsOrigins::new(&args.cors_origins).map_err(|e| anyhow!("--cors-origin: {e}"))?;
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
    let server = server
        .listen(listener)
        .with_context(|| format!("cannot listen on {}", args.bind))?;
    for address in server.addrs() {
        tracing::info!(%address, database = %args.database.database, "petstore listening");
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
    actix_web::rt::spawn(crate::delivery::run(stopping.clone(), tls, node));
    actix_web::rt::spawn(crate::changes::watch(stopping.clone()));
    actix_web::rt::spawn(async move {
        wait_for_stop_signal().await;
        tracing::info!("stopping: finishing in-flight requests");
        stopping.begin_shutdown();
        handle.stop(true).await;
    });
    server.await?;
    if let Some(traces) = traces {
        // The exporter's thread sends the last batch; nothing else is left to run.
        traces.finish();
    }
    tracing::info!("stopped");
    Ok(())
}

/// SIGTERM or SIGINT (Ctrl-C).
async fn wait_for_stop_signal() {
    use actix_web::rt::signal::unix::{SignalKind, signal};
    let interrupt = Box::pin(actix_web::rt::signal::ctrl_c());
    match signal(SignalKind::terminate()) {
        Ok(mut terminate) => {
            let terminated = Box::pin(async move { terminate.recv().await });
            futures_util::future::select(interrupt, terminated).await;
        }
        Err(error) => {
            tracing::warn!(%error, "cannot listen for SIGTERM; stopping on Ctrl-C only");
            let _ = interrupt.await;
        }
    }
}

//! The `petstore` command line: flags with environment twins (the flag wins).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix_web::HttpServer;
use clap::{Args, Parser, Subcommand, ValueEnum};
use petstore_core::SystemClock;
use petstore_store::{Durability, SqliteStore, StoreConfig};

use crate::app::{HttpLimits, app};
use crate::state::AppState;

/// The pet store service: a JSON HTTP API under /v1 on an embedded SQLite database.
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
    Serve(ServeArgs),
    /// Create the database if needed, apply pending migrations, and exit.
    Migrate(DatabaseArgs),
}

/// Where the database is.
#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// The SQLite database file; created if missing.
    #[arg(long, env = "PETSTORE_DATABASE", default_value = "petstore.db")]
    pub database: PathBuf,
    /// When a commit is durable: `full` survives power loss, `normal` is faster and survives
    /// a crash of the process.
    #[arg(long, env = "PETSTORE_DURABILITY", value_enum, default_value_t = DurabilityArg::Full)]
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
    /// How long a client may take to send its request headers, in milliseconds.
    #[arg(long, env = "PETSTORE_CLIENT_TIMEOUT_MS", default_value_t = 5000)]
    pub client_timeout_ms: u64,
    /// How long an idle keep-alive connection stays open, in seconds.
    #[arg(long, env = "PETSTORE_KEEP_ALIVE_SECS", default_value_t = 5)]
    pub keep_alive_secs: u64,
    /// How long in-flight requests may finish after SIGTERM, in seconds.
    #[arg(long, env = "PETSTORE_SHUTDOWN_TIMEOUT_SECS", default_value_t = 30)]
    pub shutdown_timeout_secs: u64,
}

impl DatabaseArgs {
    /// The store configuration these arguments describe.
    pub fn store_config(&self) -> StoreConfig {
        let mut config = StoreConfig::new(&self.database);
        config.durability = match self.durability {
            DurabilityArg::Full => Durability::Full,
            DurabilityArg::Normal => Durability::Normal,
        };
        config
    }
}

/// Sets up logging to standard error.
pub fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("PETSTORE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// `petstore migrate`.
pub fn migrate(args: &DatabaseArgs) -> Result<(), String> {
    let applied = petstore_store::migrate(&args.store_config()).map_err(|e| e.to_string())?;
    if applied.is_empty() {
        tracing::info!(database = %args.database.display(), "the database is up to date");
    }
    for version in applied {
        tracing::info!(%version, "migration applied");
    }
    Ok(())
}

/// `petstore serve`: runs until SIGINT or SIGTERM, then lets in-flight requests finish.
pub async fn serve(args: ServeArgs) -> Result<(), String> {
    let mut config = args.database.store_config();
    config.connection_timeout = Duration::from_millis(args.db_wait_ms);
    let store = SqliteStore::open(&config).map_err(|e| e.to_string())?;
    let state = AppState::new(store, Arc::new(SystemClock));
    let limits = HttpLimits {
        max_body_bytes: args.max_body_bytes,
    };
    // Build the document once, before the workers need it.
    let _ = crate::openapi::document();

    let mut server = HttpServer::new(move || app(state.clone(), limits))
        .client_request_timeout(Duration::from_millis(args.client_timeout_ms))
        .keep_alive(Duration::from_secs(args.keep_alive_secs))
        .shutdown_timeout(args.shutdown_timeout_secs);
    if let Some(workers) = args.workers {
        server = server.workers(workers);
    }
    let server = server
        .bind(&args.bind)
        .map_err(|e| format!("cannot listen on {}: {e}", args.bind))?;
    for address in server.addrs() {
        tracing::info!(%address, database = %args.database.database.display(), "petstore listening");
    }
    server.run().await.map_err(|e| e.to_string())?;
    tracing::info!("stopped");
    Ok(())
}

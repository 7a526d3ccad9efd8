//! The `petstore` command line: flags with environment twins (the flag wins). This module
//! holds the command, the flags every database command shares ([`DatabaseArgs`]) and the
//! small commands; each larger subcommand has a module of its own.

mod config;
mod keys;
mod serve;
mod signals;
mod transfer;
mod values;

pub use config::{CommandLineError, Invocation, parse_command_line};
pub use keys::{KeysCommand, keys};
pub use serve::{ServeArgs, WebhookArgs, serve};
pub use signals::Signals;
pub use transfer::{BackupArgs, CopyArgs, backup, copy};

use clap::{Args, Parser, Subcommand, ValueEnum};

use anyhow::Context;
use petstore_store::{Database, Durability, StoreConfig};

/// The pet store service: a JSON HTTP API under /v1 on an embedded SQLite database or on
/// PostgreSQL.
#[derive(Debug, Parser)]
// No `about`: an empty one takes the crate's description ("the HTTP API and the binary"),
// written for crates.io; the doc comment above says what the program is.
#[command(name = "petstore", version = crate::metrics::VERSION, long_about = None)]
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
    /// Create the database if needed, apply pending migrations, and exit. With --finish,
    /// finish an upgrade once every node runs this version (docs/deployment.md).
    Migrate(MigrateArgs),
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

/// `petstore migrate`.
#[derive(Debug, Clone, Args)]
pub struct MigrateArgs {
    /// The database.
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Run the migrations that finish this version's upgrade (those that may drop or change
    /// what an older version uses), once every node runs this version: refused while a node
    /// that knows fewer migrations was seen in the last 30 s.
    #[arg(long)]
    pub finish: bool,
    /// With --finish: run them even though an older node was seen (one that is gone for good
    /// but stopped without saying so, say).
    #[arg(long, requires = "finish")]
    pub force: bool,
    /// With --finish: say what it would run and which nodes it would wait for, on standard
    /// output, and change nothing.
    #[arg(long, requires = "finish", conflicts_with = "force")]
    pub dry_run: bool,
}

/// Where the database is.
#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// The database: a SQLite file, or a PostgreSQL database as a
    /// `postgres://user@host:5432/name` URL (also `postgresql://`). `serve` and `migrate`
    /// create a missing SQLite file; the other commands need one that exists. A database
    /// holding another program's tables, or migrated by a newer version, is refused.
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
    #[arg(long, env = "PETSTORE_DB_CONNECTIONS", global = true, value_parser = clap::value_parser!(u32).range(1..))]
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

fn parse_database(text: &str) -> Result<Database, String> {
    if text.is_empty() {
        return Err("give a SQLite file or a postgres:// URL".to_owned());
    }
    let database = Database::parse(text);
    if let Database::Sqlite(file) = &database {
        values::folder_exists(file)?;
    }
    Ok(database)
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

/// `petstore check`: `Ok(false)` when a violation was found (each printed on standard output).
pub fn check(args: &DatabaseArgs) -> anyhow::Result<bool> {
    let found = petstore_store::check(&args.store_config())
        .with_context(|| format!("cannot check {}", args.database))?;
    for violation in &found {
        println!("{violation}");
    }
    match found.len() {
        0 => tracing::info!(database = %args.database, "every check holds"),
        1 => tracing::warn!(database = %args.database, found = 1, "the check found 1 problem"),
        n => tracing::warn!(database = %args.database, found = n, "the check found {n} problems"),
    }
    Ok(found.is_empty())
}

/// `petstore migrate`.
pub fn migrate(args: &MigrateArgs) -> anyhow::Result<()> {
    let config = args.database.store_config();
    if args.dry_run {
        print!(
            "{}",
            finish_plan_text(&petstore_store::finish_plan(&config)?)
        );
        return Ok(());
    }
    let applied = if args.finish {
        petstore_store::finish_upgrade(&config, args.force)?
    } else {
        petstore_store::migrate(&config)?
    };
    if applied.is_empty() {
        tracing::info!(database = %args.database.database, "the database is up to date");
    }
    for version in applied {
        tracing::info!(%version, "migration applied");
    }
    Ok(())
}

/// `migrate --finish --dry-run`'s answer: a line per migration it would run and per node it
/// would wait for.
fn finish_plan_text(plan: &petstore_store::FinishPlan) -> String {
    let mut text = String::new();
    if plan.pending.is_empty() {
        text.push_str("would run: nothing (no migration of this version is left to finish)\n");
    }
    for version in &plan.pending {
        text.push_str(&format!("would run: {version}\n"));
    }
    for old in &plan.older {
        text.push_str(&format!(
            "would wait for: {} (knows migrations up to {}, seen {} s ago)\n",
            old.node, old.schema_version, old.seen_seconds_ago
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn help_opens_with_what_the_program_is() {
        let help = super::Cli::command().render_help().to_string();
        assert!(
            help.starts_with("The pet store service: a JSON HTTP API under /v1"),
            "{help}"
        );
    }
}

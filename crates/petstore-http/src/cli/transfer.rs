//! `petstore backup` and `petstore copy`: a whole database moved, with its progress shown.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{DatabaseArgs, parse_database};
use anyhow::Context;
use petstore_store::{Database, StoreConfig};

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
    /// The database to copy from: a SQLite file or a `postgres://` URL, this service's and
    /// at this version. It is opened read-only and never migrated.
    #[arg(long, env = "PETSTORE_COPY_FROM", value_parser = parse_database)]
    pub from: Database,
    /// The database to copy into: a SQLite file (created if missing) or a `postgres://` URL
    /// (the database created if missing and the role may); it must hold no row.
    #[arg(long, env = "PETSTORE_COPY_TO", value_parser = parse_database)]
    pub to: Database,
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

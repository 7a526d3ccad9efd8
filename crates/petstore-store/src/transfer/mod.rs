//! Moving a whole database: [`copy`] from any database into an empty one, of either backend,
//! and [`backup`], a copy into a new SQLite file.
//!
//! A copy reads the source in one snapshot (SQLite: one read transaction, which in WAL mode
//! never holds up the service's writer; PostgreSQL: one `REPEATABLE READ READ ONLY`
//! transaction) and writes the target in one transaction: the target holds everything or,
//! if the copy fails or is killed half way, nothing. Rows keep their ids, and each table's id
//! sequence is moved past the source's (past the ids it ever gave, not only those still there),
//! so the next event, key or pet gets an id no copied row or client cursor has seen.
//!
//! The target's triggers (which keep each pet's count of open orders, and refuse an order
//! for a pet that is gone) are off while the rows go in: the rows are copied as they are,
//! counts included, and a complete order may outlive its pet.

mod conn;
mod tables;

use std::path::Path;

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::sql_types::BigInt;

use crate::config::{Database, StoreConfig};
use crate::error::StoreError;
use crate::postgres::{self, connect_postgres, migrate_postgres};
use crate::sqlite::{Untouched, connect, migrate_sqlite};
pub(crate) use conn::{Conn, id_position, max_id, on_backend};
use conn::{in_snapshot, in_transaction, restore_triggers, set_id_position, suspend_triggers};
use tables::{
    Categories, Deliveries, Events, HoldLines, Holds, Idempotency, Keys, Movements, OrderLines,
    Orders, Pets, Shop, Table, Webhooks,
};

/// What a copy has done so far, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// A table's copy begins: `rows` to go.
    Table {
        /// The table.
        name: &'static str,
        /// Its rows in the source.
        rows: u64,
    },
    /// `done` of the table's rows are written (to the open transaction).
    Rows {
        /// The table.
        name: &'static str,
        /// Rows written so far.
        done: u64,
    },
    /// Every row is written; the target commits.
    Committing,
}

/// Rows copied, per table, in the order copied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Copied(pub Vec<(&'static str, u64)>);

impl Copied {
    /// Rows copied in all.
    pub fn total(&self) -> u64 {
        self.0.iter().map(|(_, rows)| rows).sum()
    }
}

/// Copies one table's rows from a source to a target, telling `progress`; the rows copied.
type CopyRows = fn(&mut Conn, &mut Conn, &mut dyn FnMut(Progress)) -> Result<u64, StoreError>;

/// One table as a copy handles it, whatever its row type.
struct TableCopy {
    name: &'static str,
    has_id: bool,
    pg_identity: bool,
    count: fn(&mut Conn) -> QueryResult<i64>,
    copy: CopyRows,
}

impl TableCopy {
    const fn of<T: Table>() -> Self {
        Self {
            name: T::NAME,
            has_id: T::HAS_ID,
            pg_identity: T::PG_IDENTITY,
            count: T::count,
            copy: copy_table::<T>,
        }
    }
}

/// Every table the service keeps, in an order that satisfies their references: categories
/// before pets, keys before the orders they own, events before the deliveries that name them.
const TABLES: [TableCopy; 13] = [
    TableCopy::of::<Categories>(),
    TableCopy::of::<Pets>(),
    TableCopy::of::<Keys>(),
    TableCopy::of::<Orders>(),
    TableCopy::of::<OrderLines>(),
    TableCopy::of::<Holds>(),
    TableCopy::of::<HoldLines>(),
    TableCopy::of::<Movements>(),
    TableCopy::of::<Events>(),
    TableCopy::of::<Idempotency>(),
    TableCopy::of::<Webhooks>(),
    TableCopy::of::<Deliveries>(),
    TableCopy::of::<Shop>(),
];

/// The tables whose ids come from a sequence: all but the idempotency records.
pub(crate) fn id_tables() -> impl Iterator<Item = &'static str> {
    TABLES
        .iter()
        .filter(|table| table.has_id)
        .map(|table| table.name)
}

/// Copies everything from the database `from` into the database `to`, which is created and
/// migrated if needed and must hold no row. `progress` hears of each table and chunk.
pub fn copy(
    from: &StoreConfig,
    to: &StoreConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<Copied, StoreError> {
    if same_database(&from.database, &to.database) {
        return Err(StoreError::Config(
            "the source and the target are the same database".into(),
        ));
    }
    let (mut source, untouched) = open_source(from)?;
    let mut target = open_target(to)?;
    in_snapshot(&mut source, |source| {
        write_all(&mut target, |target| {
            // A new target's migrations began its ledger, on no rows: the ledger it gets is
            // the source's, or, if the source's has not begun, one begun on what it copied.
            on_backend!(target, |c| c.batch_execute("DELETE FROM ledger_opened"))?;
            refuse_rows(target)?;
            let mut copied = Copied::default();
            for table in &TABLES {
                copied
                    .0
                    .push((table.name, (table.copy)(source, target, progress)?));
            }
            let pending = copy_pending_events(source, target)?;
            if let Some((_, events)) = copied.0.iter_mut().find(|(name, _)| *name == Events::NAME) {
                *events += pending;
            }
            copy_ledger_start(source, target)?;
            // Past every id the source gave, and every id the target now holds (which, for the
            // events, takes in those a source's pending events were given here).
            for table in id_tables() {
                let position = id_position(source, table)?
                    .max(max_id(source, table)?)
                    .max(max_id(target, table)?);
                set_id_position(target, table, position)?;
            }
            // A source read around SQLite's locks must not have been opened meanwhile: else
            // nothing is committed.
            untouched.confirm(&from.database)?;
            progress(Progress::Committing);
            Ok(copied)
        })
    })
}

/// Copies the database `from` into a new SQLite file at `file`, which must not exist, and
/// puts the file on disk (its folder too) before returning. A backup that fails leaves no
/// file behind. The service can serve the file as it is.
pub fn backup(
    from: &StoreConfig,
    file: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<Copied, StoreError> {
    if file.exists() {
        return Err(StoreError::Config(format!(
            "{} exists: a backup goes to a new file",
            file.display()
        )));
    }
    let to = StoreConfig::for_database(Database::Sqlite(file.to_path_buf()));
    let copied = match copy(from, &to, progress) {
        Ok(copied) => copied,
        Err(error) => {
            for leftover in sqlite_files(file) {
                let _ = std::fs::remove_file(leftover);
            }
            return Err(error);
        }
    };
    settle(&to, file)?;
    Ok(copied)
}

/// The file and the SQLite files beside it (`-wal`, `-shm`).
fn sqlite_files(file: &Path) -> [std::path::PathBuf; 3] {
    let beside = |suffix: &str| {
        let mut name = file.as_os_str().to_owned();
        name.push(suffix);
        std::path::PathBuf::from(name)
    };
    [file.to_path_buf(), beside("-wal"), beside("-shm")]
}

/// Moves everything from the log into the file itself, so that the file alone is the backup,
/// and syncs it and its folder.
fn settle(config: &StoreConfig, file: &Path) -> Result<(), StoreError> {
    let mut conn = connect(config)?;
    conn.batch_execute("PRAGMA wal_checkpoint(TRUNCATE);")?;
    drop(conn);
    let sync = |path: &Path| std::fs::File::open(path).and_then(|opened| opened.sync_all());
    let folder = file
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    sync(file)
        .and_then(|()| sync(folder))
        .map_err(|e| StoreError::Config(format!("cannot sync {}: {e}", file.display())))
}

fn same_database(a: &Database, b: &Database) -> bool {
    match (a, b) {
        (Database::Sqlite(a), Database::Sqlite(b)) => {
            a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b)
        }
        (Database::Postgres(a), Database::Postgres(b)) => a == b,
        _ => false,
    }
}

/// The source, which must exist and be migrated to this version (a copy never changes it).
fn open_source(config: &StoreConfig) -> Result<(Conn, Untouched), StoreError> {
    crate::ownership::readable(crate::store::inspect(config)?, &config.database)?;
    Conn::to_existing(config)
}

/// The target, created (as migrating creates what it is pointed at) and migrated if needed.
fn open_target(config: &StoreConfig) -> Result<Conn, StoreError> {
    match &config.database {
        Database::Sqlite(_) => {
            migrate_sqlite(config)?;
            Ok(Conn::Sqlite(connect(config)?))
        }
        Database::Postgres(_) => {
            migrate_postgres(config)?;
            Ok(Conn::Pg(connect_postgres(config)?))
        }
    }
}

/// Runs `work` in one write transaction of the target, with its triggers off and (on
/// PostgreSQL) its ids writable.
fn write_all<T>(
    conn: &mut Conn,
    work: impl FnOnce(&mut Conn) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    in_transaction(conn, ("BEGIN IMMEDIATE", "BEGIN"), |conn| {
        let triggers = suspend_triggers(conn)?;
        let value = work(conn)?;
        restore_triggers(conn, &triggers)?;
        Ok(value)
    })
}

/// Copies the events a PostgreSQL source had committed but not yet stamped
/// (`pending_events`): they join the target's feed after every stamped one, in the order they
/// were written, as the source's next stamp would place them. Returns how many.
fn copy_pending_events(source: &mut Conn, target: &mut Conn) -> Result<u64, StoreError> {
    let Conn::Pg(c) = source else {
        return Ok(0);
    };
    let rows: Vec<tables::EventRow> = diesel::sql_query(
        "SELECT $1 + row_number() OVER (ORDER BY seq) AS id, time, type AS event_type, subject, \
         data, traceparent, actor FROM pending_events ORDER BY seq",
    )
    .bind::<BigInt, _>(postgres::feed::event_id_position(c)?)
    .load(c)?;
    for chunk in rows.chunks(usize::try_from(tables::CHUNK).unwrap_or(500)) {
        Events::insert(target, chunk)?;
    }
    Ok(rows.len() as u64)
}

/// Refuses a target that holds any row, naming the first table that does.
fn refuse_rows(conn: &mut Conn) -> Result<(), StoreError> {
    for table in &TABLES {
        let rows = (table.count)(conn)?;
        if rows > 0 {
            let rows = if rows == 1 {
                "1 row".to_owned()
            } else {
                format!("{rows} rows")
            };
            return Err(StoreError::Config(format!(
                "the target is not empty: {} holds {rows}; copy only into an empty database",
                table.name
            )));
        }
    }
    Ok(())
}

/// Gives the target the source's beginning of the stock ledger, or begins it there on what was
/// copied (with the statement that begins it when an upgrade is finished) if the source's has
/// not begun: the target has no node of an older version to wait for.
fn copy_ledger_start(source: &mut Conn, target: &mut Conn) -> Result<(), StoreError> {
    use crate::schema::ledger_opened;
    use crate::schema::sql_types::Time;
    let began: Option<Time> = on_backend!(source, |c| ledger_opened::table
        .select(ledger_opened::at)
        .get_result::<chrono::DateTime<chrono::Utc>>(c)
        .optional())?
    .map(Time);
    match began {
        Some(at) => {
            on_backend!(target, |c| diesel::insert_into(ledger_opened::table)
                .values((ledger_opened::id.eq(1), ledger_opened::at.eq(at)))
                .execute(c))?;
        }
        None => match target {
            Conn::Sqlite(c) => c.batch_execute(BEGIN_LEDGER_SQLITE)?,
            Conn::Pg(c) => c.batch_execute(BEGIN_LEDGER_POSTGRES)?,
        },
    }
    Ok(())
}

/// The migrations that begin the stock ledger when an upgrade is finished; each does nothing
/// where it has begun.
const BEGIN_LEDGER_SQLITE: &str =
    include_str!("../../../../migrations/sqlite/2026-11-29-900001_open_stock_ledger/up.sql");
const BEGIN_LEDGER_POSTGRES: &str =
    include_str!("../../../../migrations/postgres/2026-11-29-900001_open_stock_ledger/up.sql");

/// Copies every row of `T`, chunk by chunk.
fn copy_table<T: Table>(
    source: &mut Conn,
    target: &mut Conn,
    progress: &mut dyn FnMut(Progress),
) -> Result<u64, StoreError> {
    let rows = u64::try_from(T::count(source)?).unwrap_or_default();
    progress(Progress::Table {
        name: T::NAME,
        rows,
    });
    let mut done = 0_u64;
    let mut chunk = T::chunk(source, None)?;
    while !chunk.is_empty() {
        for row in &mut chunk {
            T::detach(row);
        }
        T::insert(target, &chunk)?;
        done += chunk.len() as u64;
        progress(Progress::Rows {
            name: T::NAME,
            done,
        });
        chunk = T::chunk(source, chunk.last())?;
    }
    Ok(done)
}

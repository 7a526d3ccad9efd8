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

mod tables;

use std::path::Path;

use diesel::connection::{AnsiTransactionManager as Manager, SimpleConnection, TransactionManager};
use diesel::pg::PgConnection;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use diesel::sqlite::SqliteConnection;
use diesel_migrations::MigrationHarness;

use crate::config::{Database, StoreConfig};
use crate::error::StoreError;
use crate::postgres::{self, PG_MIGRATIONS, connect_postgres, migrate_postgres};
use crate::sqlite::{MIGRATIONS, connect, migrate_sqlite};
pub(crate) use tables::on_backend;
use tables::{Categories, Deliveries, Events, Idempotency, Keys, Orders, Pets, Table, Webhooks};

/// A connection to either backend.
pub(crate) enum Conn {
    Sqlite(SqliteConnection),
    Pg(PgConnection),
}

impl Conn {
    /// A connection to the database of `config`, which must exist: this never creates one.
    pub(crate) fn to_existing(config: &StoreConfig) -> Result<Self, StoreError> {
        let mut config = config.clone();
        config.create = false;
        Ok(match &config.database {
            Database::Sqlite(_) => Conn::Sqlite(connect(&config)?),
            Database::Postgres(_) => Conn::Pg(connect_postgres(&config)?),
        })
    }

    /// The names of this version's migrations the database has not had.
    pub(crate) fn pending_migrations(&mut self) -> Result<Vec<String>, StoreError> {
        fn names<DB: diesel::backend::Backend>(
            pending: Vec<Box<dyn diesel::migration::Migration<DB> + '_>>,
        ) -> Vec<String> {
            pending.iter().map(|m| m.name().to_string()).collect()
        }
        match self {
            Conn::Sqlite(c) => c.pending_migrations(MIGRATIONS).map(names),
            Conn::Pg(c) => c.pending_migrations(PG_MIGRATIONS).map(names),
        }
        .map_err(|e| StoreError::Migration(e.to_string()))
    }
}

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
const TABLES: [TableCopy; 8] = [
    TableCopy::of::<Categories>(),
    TableCopy::of::<Pets>(),
    TableCopy::of::<Keys>(),
    TableCopy::of::<Orders>(),
    TableCopy::of::<Events>(),
    TableCopy::of::<Idempotency>(),
    TableCopy::of::<Webhooks>(),
    TableCopy::of::<Deliveries>(),
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
    let mut source = open_source(from)?;
    let mut target = open_target(to)?;
    in_snapshot(&mut source, |source| {
        write_all(&mut target, |target| {
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
            // Past every id the source gave, and every id the target now holds (which, for the
            // events, takes in those a source's pending events were given here).
            for table in id_tables() {
                let position = id_position(source, table)?
                    .max(max_id(source, table)?)
                    .max(max_id(target, table)?);
                set_id_position(target, table, position)?;
            }
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
fn open_source(config: &StoreConfig) -> Result<Conn, StoreError> {
    let mut conn = Conn::to_existing(config)?;
    if !conn.pending_migrations()?.is_empty() {
        return Err(StoreError::Migration(format!(
            "{} is not migrated to this version: run `petstore migrate` on it first",
            config.database
        )));
    }
    Ok(conn)
}

/// The target, created and migrated if needed.
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

/// Runs `work` in one transaction begun with `sqlite` or `pg` (by the backend), committed if
/// `work` succeeds and rolled back otherwise.
fn in_transaction<T>(
    conn: &mut Conn,
    begin: (&str, &str),
    work: impl FnOnce(&mut Conn) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    match conn {
        Conn::Sqlite(c) => Manager::begin_transaction_sql(c, begin.0)?,
        Conn::Pg(c) => Manager::begin_transaction_sql(c, begin.1)?,
    }
    match work(conn) {
        Ok(value) => {
            on_backend!(&mut *conn, |c| Manager::commit_transaction(c))?;
            Ok(value)
        }
        Err(error) => {
            let _ = on_backend!(&mut *conn, |c| Manager::rollback_transaction(c));
            Err(error)
        }
    }
}

/// Runs `work` in one consistent snapshot of the source: on SQLite a deferred transaction
/// (its first read takes the snapshot, and it takes no lock that would stop the service's
/// writer); on PostgreSQL `REPEATABLE READ READ ONLY`.
fn in_snapshot<T>(
    conn: &mut Conn,
    work: impl FnOnce(&mut Conn) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    in_transaction(
        conn,
        ("BEGIN", "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"),
        work,
    )
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

#[derive(QueryableByName)]
struct Trigger {
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Text)]
    sql: String,
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
         data, traceparent FROM pending_events ORDER BY seq",
    )
    .bind::<BigInt, _>(postgres::feed::event_id_position(c)?)
    .load(c)?;
    for chunk in rows.chunks(usize::try_from(tables::CHUNK).unwrap_or(500)) {
        Events::insert(target, chunk)?;
    }
    Ok(rows.len() as u64)
}

/// Turns the target's triggers off for the copy. SQLite cannot disable a trigger: they are
/// dropped, and created again from their own text by [`restore_triggers`], in the same
/// transaction. PostgreSQL disables them, and lets the copy write the ids of its identity
/// columns (which the service leaves to the database).
fn suspend_triggers(conn: &mut Conn) -> Result<Vec<Trigger>, StoreError> {
    match conn {
        Conn::Sqlite(c) => {
            let triggers: Vec<Trigger> = diesel::sql_query(
                "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name",
            )
            .load(c)?;
            for trigger in &triggers {
                c.batch_execute(&format!("DROP TRIGGER \"{}\"", trigger.name))?;
            }
            Ok(triggers)
        }
        Conn::Pg(c) => {
            for table in &TABLES {
                let name = table.name;
                c.batch_execute(&format!("ALTER TABLE {name} DISABLE TRIGGER USER"))?;
                if table.pg_identity {
                    c.batch_execute(&format!(
                        "ALTER TABLE {name} ALTER COLUMN id SET GENERATED BY DEFAULT"
                    ))?;
                }
            }
            Ok(Vec::new())
        }
    }
}

fn restore_triggers(conn: &mut Conn, triggers: &[Trigger]) -> Result<(), StoreError> {
    match conn {
        Conn::Sqlite(c) => {
            for trigger in triggers {
                c.batch_execute(&trigger.sql)?;
            }
        }
        Conn::Pg(c) => {
            for table in &TABLES {
                let name = table.name;
                c.batch_execute(&format!("ALTER TABLE {name} ENABLE TRIGGER USER"))?;
                if table.pg_identity {
                    c.batch_execute(&format!(
                        "ALTER TABLE {name} ALTER COLUMN id SET GENERATED ALWAYS"
                    ))?;
                }
            }
        }
    }
    Ok(())
}

/// Refuses a target that holds any row, naming the first table that does.
fn refuse_rows(conn: &mut Conn) -> Result<(), StoreError> {
    for table in &TABLES {
        let rows = (table.count)(conn)?;
        if rows > 0 {
            return Err(StoreError::Config(format!(
                "the target is not empty: {} holds {rows} rows; copy only into an empty database",
                table.name
            )));
        }
    }
    Ok(())
}

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

#[derive(QueryableByName)]
struct Position {
    #[diesel(sql_type = BigInt)]
    id: i64,
}

/// The last id `table`'s sequence gave (0 if none): above every row there now, and above
/// those deleted since.
pub(crate) fn id_position(conn: &mut Conn, table: &str) -> Result<i64, StoreError> {
    let position = match conn {
        Conn::Sqlite(c) => diesel::sql_query(
            "SELECT COALESCE(MAX(seq), 0) AS id FROM sqlite_sequence WHERE name = ?",
        )
        .bind::<Text, _>(table)
        .get_result::<Position>(c)?,
        Conn::Pg(c) if table == Events::NAME => Position {
            id: postgres::feed::event_id_position(c)?,
        },
        Conn::Pg(c) => {
            let sequence = pg_sequence(c, table)?;
            diesel::sql_query(format!(
                "SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS id FROM {sequence}"
            ))
            .get_result::<Position>(c)?
        }
    };
    Ok(position.id)
}

/// The largest id of `table`, or 0.
pub(crate) fn max_id(conn: &mut Conn, table: &str) -> Result<i64, StoreError> {
    let sql = format!("SELECT COALESCE(MAX(id), 0) AS id FROM {table}");
    let largest = on_backend!(conn, |c| diesel::sql_query(&sql).get_result::<Position>(c))?;
    Ok(largest.id)
}

/// Moves `table`'s sequence to `position`: its next id is above it.
fn set_id_position(conn: &mut Conn, table: &str, position: i64) -> Result<(), StoreError> {
    if position < 1 {
        return Ok(());
    }
    match conn {
        Conn::Sqlite(c) => {
            let moved = diesel::sql_query("UPDATE sqlite_sequence SET seq = ? WHERE name = ?")
                .bind::<BigInt, _>(position)
                .bind::<Text, _>(table)
                .execute(c)?;
            if moved == 0 {
                diesel::sql_query("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)")
                    .bind::<Text, _>(table)
                    .bind::<BigInt, _>(position)
                    .execute(c)?;
            }
        }
        Conn::Pg(c) if table == Events::NAME => postgres::feed::move_event_ids_past(c, position)?,
        Conn::Pg(c) => {
            let sequence = pg_sequence(c, table)?;
            diesel::sql_query(format!(
                "SELECT setval('{sequence}', $1) IS NOT NULL AS set"
            ))
            .bind::<BigInt, _>(position)
            .execute(c)?;
        }
    }
    Ok(())
}

/// The name of the sequence behind `table`'s id, as PostgreSQL quotes it.
fn pg_sequence(conn: &mut PgConnection, table: &str) -> Result<String, StoreError> {
    #[derive(QueryableByName)]
    struct Name {
        #[diesel(sql_type = diesel::sql_types::Nullable<Text>)]
        name: Option<String>,
    }
    diesel::sql_query("SELECT pg_get_serial_sequence($1, 'id') AS name")
        .bind::<Text, _>(table)
        .get_result::<Name>(conn)?
        .name
        .ok_or_else(|| StoreError::Corrupt(format!("{table}.id has no sequence")))
}

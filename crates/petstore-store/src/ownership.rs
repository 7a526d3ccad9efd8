//! Whether a database is this service's, found before anything touches it: what each
//! backend's `inspect` reads (the tables, the applied migrations), judged here the same way.
//!
//! Every command that opens a database asks first, on a connection that only reads (a SQLite
//! file opened read-only; a PostgreSQL session whose transactions are read-only): migrating
//! another program's database would add the whole schema beside its tables, and serving one a
//! newer version finished its upgrade on would run this version's statements on a schema they
//! were not written for. So a database whose migration table does not record our first
//! migration is refused, and so is one that holds a migration this binary does not know that
//! finishes an upgrade ([`finishes_an_upgrade`]); both are left exactly as they were. A newer
//! version's additive migrations are not refused: this version runs beside them, as the old
//! nodes of a rolling upgrade do. An empty SQLite file (or none) and an empty PostgreSQL
//! schema are new.

use std::collections::BTreeSet;

use diesel::migration::MigrationSource;
use diesel::prelude::*;
use diesel::sql_types::Text;
use diesel_migrations::EmbeddedMigrations;

use crate::config::Database;
use crate::error::StoreError;

/// The table Diesel keeps the applied migrations in.
const MIGRATION_TABLE: &str = "__diesel_schema_migrations";

/// What a database holds, as far as this service is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// Nothing yet (no SQLite file, an empty one, or a PostgreSQL schema with no tables):
    /// migrating makes it this service's.
    New,
    /// This service's, with the migrations of this version it has not had (none when it is
    /// up to date; some when an older version left it), and those of a newer version that
    /// only add to the schema, which this version runs beside (a rolling upgrade).
    Ours {
        /// This version's migrations not yet applied, by version.
        pending: Vec<String>,
        /// A newer version's additive migrations, applied and unknown to this version.
        ahead: Vec<String>,
    },
}

/// Whether the migration `version` finishes an upgrade (`petstore migrate --finish`): it may
/// drop, rename or narrow what an older version still uses. Its directory's sequence number
/// (the last six digits of the version) is 900000 or more; every other migration only adds
/// (new tables, new nullable or defaulted columns, new indexes), and an older version runs
/// beside it. The rule is in the number so that a binary can judge a migration it does not
/// know.
pub(crate) fn finishes_an_upgrade(version: &str) -> bool {
    version.len() >= 6
        && version[version.len() - 6..]
            .parse::<u32>()
            .is_ok_and(|sequence| sequence >= 900_000)
}

/// A row of one text column, `name`.
#[derive(QueryableByName)]
pub(crate) struct Name {
    #[diesel(sql_type = Text)]
    name: String,
}

/// What `tables` (the database's) and `applied` (its migration table's versions, if it has
/// one) say, against `known` (this version's migrations).
///
/// A database is this service's when its migration table records this service's first
/// migration (the one that made the schema): another program that uses Diesel keeps the same
/// table, empty or with versions of its own, and is no newer petstore.
pub(crate) fn judge(
    database: &Database,
    tables: &[String],
    applied: Option<BTreeSet<String>>,
    known: &[String],
) -> Result<Found, StoreError> {
    let applied = applied.unwrap_or_default();
    let ours = known
        .iter()
        .min()
        .is_some_and(|first| applied.contains(first));
    if !ours {
        let only_an_empty_migration_table = tables.iter().all(|table| table == MIGRATION_TABLE);
        if applied.is_empty() && only_an_empty_migration_table {
            return Ok(Found::New);
        }
        return Err(StoreError::NotOurs {
            database: database.to_string(),
            tables: tables
                .iter()
                .filter(|table| *table != MIGRATION_TABLE)
                .cloned()
                .collect(),
            migrations: applied.into_iter().collect(),
        });
    }
    let unknown: Vec<String> = applied
        .iter()
        .filter(|version| !known.contains(version))
        .cloned()
        .collect();
    if unknown.iter().any(|version| finishes_an_upgrade(version)) {
        return Err(StoreError::Newer {
            database: database.to_string(),
            unknown,
        });
    }
    let pending = known
        .iter()
        .filter(|version| !applied.contains(*version))
        .cloned()
        .collect();
    Ok(Found::Ours {
        pending,
        ahead: unknown,
    })
}

/// The first column, `name`, of the rows `sql` selects, sorted.
pub(crate) fn names<C>(conn: &mut C, sql: &str) -> Result<Vec<String>, StoreError>
where
    C: Connection,
    diesel::query_builder::SqlQuery: diesel::query_dsl::LoadQuery<'static, C, Name>,
{
    let mut found: Vec<String> = diesel::sql_query(sql)
        .load::<Name>(conn)?
        .into_iter()
        .map(|row| row.name)
        .collect();
    found.sort();
    Ok(found)
}

/// The versions in the migration table, if the database has one.
pub(crate) fn applied<C>(
    conn: &mut C,
    tables: &[String],
) -> Result<Option<BTreeSet<String>>, StoreError>
where
    C: Connection,
    diesel::query_builder::SqlQuery: diesel::query_dsl::LoadQuery<'static, C, Name>,
{
    if !tables.iter().any(|table| table == MIGRATION_TABLE) {
        return Ok(None);
    }
    let versions = names(
        conn,
        &format!("SELECT version AS name FROM {MIGRATION_TABLE}"),
    )?;
    Ok(Some(versions.into_iter().collect()))
}

/// The versions of this binary's migrations for one backend, as the migration table keeps
/// them.
pub(crate) fn versions<DB: diesel::backend::Backend>(
    migrations: &EmbeddedMigrations,
) -> Result<Vec<String>, StoreError>
where
    EmbeddedMigrations: MigrationSource<DB>,
{
    Ok(MigrationSource::<DB>::migrations(migrations)
        .map_err(|e| StoreError::Migration(e.to_string()))?
        .iter()
        .map(|migration| migration.name().version().to_string())
        .collect())
}

/// Why a command that reads finds nothing to read at `database`: no file there (a mistyped
/// path is the likelier mistake), or no pet store in it yet.
pub(crate) fn nothing_there(database: &Database) -> StoreError {
    StoreError::Config(match database {
        Database::Sqlite(file) if !file.exists() => format!(
            "there is no database at {database}: check the path (`petstore migrate` or \
             `petstore serve` creates a new one)"
        ),
        _ => format!(
            "{database} holds no pet store yet: `petstore migrate` or `petstore serve` creates \
             one"
        ),
    })
}

/// Whether a database found so may be read as it is, without migrating it: this service's,
/// and at this version, or this version's upgrade not yet finished (only migrations that
/// finish an upgrade pending). One an older version left is refused with what to run; a new
/// one has nothing to read.
pub(crate) fn readable(found: Found, database: &Database) -> Result<(), StoreError> {
    match found {
        Found::Ours { pending, .. } if pending.iter().all(|v| finishes_an_upgrade(v)) => Ok(()),
        Found::Ours { pending, .. } => Err(StoreError::Older {
            database: database.to_string(),
            pending,
        }),
        Found::New => Err(nothing_there(database)),
    }
}

/// Whether this version may finish its upgrade on a database found so: one it may read
/// ([`readable`]) that holds no newer version's migration. A newer version's additive
/// migrations mean that version's upgrade is under way, and finishing it is for the binary that
/// knows what it finishes: this one would report "up to date" and leave it half done.
pub(crate) fn finishable(found: Found, database: &Database) -> Result<(), StoreError> {
    if let Found::Ours { ahead, .. } = &found
        && !ahead.is_empty()
    {
        return Err(StoreError::FinishBelongsToNewer {
            database: database.to_string(),
            ahead: ahead.clone(),
        });
    }
    readable(found, database)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn database() -> Database {
        Database::parse("shop.db")
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn no_tables_is_new_and_tables_without_our_migrations_are_another_programs() {
        assert!(matches!(
            judge(&database(), &[], None, &strings(&["1"])),
            Ok(Found::New)
        ));
        let refused = judge(&database(), &strings(&["invoices"]), None, &strings(&["1"]));
        assert!(
            matches!(&refused, Err(StoreError::NotOurs { tables, .. }) if tables == &strings(&["invoices"])),
            "{refused:?}"
        );
    }

    /// Another Diesel program's database has a migration table too: empty, or with versions
    /// of its own. Neither makes it ours, nor a newer petstore's.
    #[test]
    fn a_finishing_migration_is_told_by_its_sequence_number() {
        assert!(finishes_an_upgrade("20261201900001"));
        assert!(!finishes_an_upgrade("20261201000010"));
        assert!(!finishes_an_upgrade("20261201899999"));
        assert!(!finishes_an_upgrade("12"));
    }

    #[test]
    fn a_migration_table_without_our_first_migration_is_another_programs() {
        let known = strings(&["20261122000001", "20261122000002"]);
        let tables = strings(&[MIGRATION_TABLE, "posts"]);
        for applied in [vec![], vec!["20200101000000"], vec!["20261122000002"]] {
            let applied = strings(&applied);
            let refused = judge(
                &database(),
                &tables,
                Some(applied.iter().cloned().collect()),
                &known,
            );
            assert!(
                matches!(&refused, Err(StoreError::NotOurs { tables, migrations, .. })
                    if tables == &strings(&["posts"]) && migrations == &applied),
                "{applied:?}: {refused:?}"
            );
        }
        // Only an empty migration table (a Diesel program that has not begun): nothing to keep.
        let empty = judge(
            &database(),
            &strings(&[MIGRATION_TABLE]),
            Some(BTreeSet::new()),
            &known,
        );
        assert!(matches!(empty, Ok(Found::New)), "{empty:?}");
    }

    #[test]
    fn a_newer_finishing_migration_is_refused_an_additive_one_run_beside_and_missing_ones_pending()
    {
        let tables = strings(&[MIGRATION_TABLE, "pets"]);
        let applied = |v: &[&str]| Some(v.iter().map(|s| (*s).to_owned()).collect());
        let known = strings(&["20261122000001", "20261122000002"]);
        let refused = judge(
            &database(),
            &tables,
            applied(&["20261122000001", "20991231900001"]),
            &known,
        );
        assert!(
            matches!(&refused, Err(StoreError::Newer { unknown, .. }) if unknown == &strings(&["20991231900001"])),
            "{refused:?}"
        );
        let older = judge(&database(), &tables, applied(&["20261122000001"]), &known);
        assert!(
            matches!(&older, Ok(Found::Ours { pending, ahead }) if pending == &strings(&["20261122000002"]) && ahead.is_empty()),
            "{older:?}"
        );
        // A newer version's migration that only adds: this version runs beside it.
        let expanded = judge(
            &database(),
            &tables,
            applied(&["20261122000001", "20261122000002", "20991231000001"]),
            &known,
        );
        assert!(
            matches!(&expanded, Ok(Found::Ours { pending, ahead }) if pending.is_empty() && ahead == &strings(&["20991231000001"])),
            "{expanded:?}"
        );
        // Read beside it, yes; finished by this version, no: the upgrade is the newer one's.
        let expanded = expanded.unwrap();
        assert!(readable(expanded.clone(), &database()).is_ok());
        let finish = finishable(expanded, &database());
        assert!(
            matches!(&finish, Err(StoreError::FinishBelongsToNewer { ahead, .. }) if ahead == &strings(&["20991231000001"])),
            "{finish:?}"
        );
        let current = judge(
            &database(),
            &tables,
            applied(&["20261122000001", "20261122000002"]),
            &known,
        );
        assert!(finishable(current.unwrap(), &database()).is_ok());
    }
}

//! Whether a database is this service's, found before anything touches it: what each
//! backend's `inspect` reads (the tables, the applied migrations), judged here the same way.
//!
//! Every command that opens a database asks first, on a connection that only reads (a SQLite
//! file opened read-only; a PostgreSQL session whose transactions are read-only): migrating
//! another program's database would add the whole schema beside its tables, and serving one a
//! newer version migrated would run this version's statements on a schema they were not
//! written for. So a database that holds tables and no migration table of ours is refused,
//! and so is one that holds a migration this binary does not know; both are left exactly as
//! they were. An empty SQLite file (or none) and an empty PostgreSQL schema are new.

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
    /// up to date; some when an older version left it).
    Ours {
        /// This version's migrations not yet applied, by version.
        pending: Vec<String>,
    },
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
    if !unknown.is_empty() {
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
    Ok(Found::Ours { pending })
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

/// Whether a database found so may be read as it is, without migrating it: this service's,
/// and at this version. One an older version left is refused with what to run; a new one has
/// nothing to read.
pub(crate) fn readable(found: Found, database: &Database) -> Result<(), StoreError> {
    match found {
        Found::Ours { pending } if pending.is_empty() => Ok(()),
        Found::Ours { pending } => Err(StoreError::Older {
            database: database.to_string(),
            pending,
        }),
        // A mistyped path is the likelier mistake than a file made empty.
        Found::New => Err(StoreError::Config(match database {
            Database::Sqlite(file) if !file.exists() => format!(
                "there is no database at {database}: check the path (`petstore migrate` or \
                 `petstore serve` creates a new one)"
            ),
            _ => format!(
                "{database} holds no pet store yet: `petstore migrate` or `petstore serve` \
                 creates one"
            ),
        })),
    }
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
    fn a_migration_this_version_does_not_know_is_refused_and_missing_ones_are_pending() {
        let tables = strings(&[MIGRATION_TABLE, "pets"]);
        let applied = |v: &[&str]| Some(v.iter().map(|s| (*s).to_owned()).collect());
        let refused = judge(
            &database(),
            &tables,
            applied(&["1", "9"]),
            &strings(&["1", "2"]),
        );
        assert!(
            matches!(&refused, Err(StoreError::Newer { unknown, .. }) if unknown == &strings(&["9"])),
            "{refused:?}"
        );
        let older = judge(&database(), &tables, applied(&["1"]), &strings(&["1", "2"]));
        assert!(
            matches!(&older, Ok(Found::Ours { pending }) if pending == &strings(&["2"])),
            "{older:?}"
        );
    }
}

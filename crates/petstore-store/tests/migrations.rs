//! The migrations apply, revert and apply again on a real file, and the schema is usable after.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::sql_types::Text;
use diesel_migrations::MigrationHarness;
use petstore_core::testkit::scenarios::Fixture;
use petstore_store::{MIGRATIONS, SqliteStore, StoreConfig, connect, migrate};

#[derive(QueryableByName)]
struct Name {
    #[diesel(sql_type = Text)]
    name: String,
}

fn objects(conn: &mut SqliteConnection) -> Vec<String> {
    diesel::sql_query(
        "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' \
         AND name <> '__diesel_schema_migrations' ORDER BY name",
    )
    .load::<Name>(conn)
    .unwrap()
    .into_iter()
    .map(|n| n.name)
    .collect()
}

#[test]
fn all_up_all_down_all_up_again() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig::new(dir.path().join("m.db"));

    let applied = migrate(&config).unwrap();
    assert!(!applied.is_empty(), "a new database gets every migration");
    let mut conn = connect(&config).unwrap();
    let schema = objects(&mut conn);
    for table in ["categories", "pets", "orders", "events"] {
        assert!(
            schema.contains(&table.to_owned()),
            "{table} exists: {schema:?}"
        );
    }

    conn.revert_all_migrations(MIGRATIONS).unwrap();
    assert_eq!(
        objects(&mut conn),
        Vec::<String>::new(),
        "down removes everything up made"
    );

    conn.run_pending_migrations(MIGRATIONS).unwrap();
    assert_eq!(objects(&mut conn), schema, "up again gives the same schema");
    assert!(
        migrate(&config).unwrap().is_empty(),
        "nothing is pending after"
    );
    drop(conn);

    // The migrated schema serves the store.
    let store = SqliteStore::open(&config).unwrap();
    store.check_ready().unwrap();
    let fixture = Fixture::new(store);
    let pet = fixture.pet_with_stock("Rex", 2);
    fixture.order(pet.id, 1).unwrap();
}

#[test]
fn opening_switches_the_file_to_wal() {
    let store = common::TempStore::new();
    let mut conn = connect(&store.config).unwrap();
    #[derive(QueryableByName)]
    struct Mode {
        #[diesel(sql_type = Text)]
        journal_mode: String,
    }
    let mode = diesel::sql_query("PRAGMA journal_mode")
        .get_result::<Mode>(&mut conn)
        .unwrap();
    assert_eq!(mode.journal_mode, "wal");
    conn.batch_execute("SELECT 1").unwrap();
}

#[test]
fn readiness_fails_when_a_migration_is_missing() {
    let store = common::TempStore::new();
    store.store.check_ready().unwrap();
    let mut conn = connect(&store.config).unwrap();
    conn.revert_last_migration(MIGRATIONS).unwrap();
    assert!(store.store.check_ready().is_err());
}

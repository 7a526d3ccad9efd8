//! `check` and `copy` on real files and real PostgreSQL databases: each broken invariant is
//! found and named, and a copy's id sequences go on past the source's, deleted ids included.
//! (`tests/http/moving.rs` in `petstore-http` moves a whole shop through the binary.)

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::sql_types::BigInt;
use diesel_migrations::MigrationHarness;
use petstore_store::testing::ScratchPostgres;
use petstore_store::{
    MIGRATIONS, PG_MIGRATIONS, StoreConfig, check, connect, connect_postgres, copy, migrate,
};

/// Two pets, one with an open order, and their ledgers, in statements both backends take.
const SHOP: &str = "INSERT INTO categories (name, name_key) VALUES ('Dogs', 'dogs');
    INSERT INTO pets (name, name_key, category_id, status, stock) VALUES ('Rex', 'rex', 1, 'available', 4);
    INSERT INTO pets (name, name_key, category_id, status, stock) VALUES ('Fido', 'fido', 1, 'available', 0);
    INSERT INTO orders (pet_id, quantity) VALUES (1, 2);
    INSERT INTO stock_movements (pet_id, kind, quantity, available_change, committed_change,
        available_after, committed_after, time)
        VALUES (1, 'opening', 6, 6, 0, 6, 0, '2026-11-29T00:00:00.000000Z'),
               (2, 'opening', 0, 0, 0, 0, 0, '2026-11-29T00:00:00.000000Z'),
               (1, 'committed', 2, -2, 2, 4, 2, '2026-11-29T00:00:01.000000Z');";

/// A database of each kind available here: a SQLite file, and a scratch PostgreSQL database
/// when a server is configured.
fn databases(dir: &std::path::Path) -> Vec<(StoreConfig, Option<ScratchPostgres>)> {
    let mut all = vec![(StoreConfig::new(dir.join("checked.db")), None)];
    match ScratchPostgres::create() {
        Some(scratch) => all.push((scratch.config(), Some(scratch))),
        None => eprintln!("skipped the PostgreSQL half: PETSTORE_TEST_POSTGRES_URL is not set"),
    }
    all
}

fn execute(config: &StoreConfig, sql: &str) {
    if config.database.to_string().starts_with("postgres") {
        connect_postgres(config)
            .unwrap()
            .batch_execute(sql)
            .unwrap();
    } else {
        connect(config).unwrap().batch_execute(sql).unwrap();
    }
}

fn is_postgres(config: &StoreConfig) -> bool {
    config.database.to_string().starts_with("postgres")
}

#[test]
fn check_names_each_broken_invariant_and_nothing_on_a_sound_database() {
    let dir = tempfile::tempdir().unwrap();
    for (config, _scratch) in databases(dir.path()) {
        migrate(&config).unwrap();
        execute(&config, SHOP);
        assert_eq!(
            check(&config).unwrap(),
            Vec::<String>::new(),
            "{}",
            config.database
        );

        execute(&config, "UPDATE pets SET open_orders = 5 WHERE id = 2");
        let rewind = if is_postgres(&config) {
            "SELECT setval(pg_get_serial_sequence('orders', 'id'), 1, false)"
        } else {
            "DELETE FROM sqlite_sequence WHERE name = 'orders'"
        };
        execute(&config, rewind);
        let found = check(&config).unwrap();
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[0].starts_with("pet 2: counts 5 open orders"),
            "{found:?}"
        );
        assert!(found[1].starts_with("orders: "), "{found:?}");

        // The last migrations finish an upgrade, which is no fault while they wait for
        // `migrate --finish`; the one before them only adds, and its absence is.
        loop {
            let reverted = if is_postgres(&config) {
                connect_postgres(&config)
                    .unwrap()
                    .revert_last_migration(PG_MIGRATIONS)
                    .unwrap()
                    .to_string()
            } else {
                connect(&config)
                    .unwrap()
                    .revert_last_migration(MIGRATIONS)
                    .unwrap()
                    .to_string()
            };
            if !reverted[reverted.len() - 6..].starts_with('9') {
                break;
            }
        }
        let found = check(&config).unwrap();
        assert_eq!(
            found.len(),
            1,
            "only the migration, before any invariant: {found:?}"
        );
        assert!(found[0].starts_with("migration ") && found[0].ends_with(" is not applied"));
    }
}

#[test]
fn check_and_copy_refuse_a_database_that_does_not_exist_and_create_none() {
    let dir = tempfile::tempdir().unwrap();
    let missing = StoreConfig::new(dir.path().join("typo.db"));
    let error = check(&missing).unwrap_err().to_string();
    assert!(error.contains("typo.db"), "{error}");
    let target = StoreConfig::new(dir.path().join("target.db"));
    assert!(copy(&missing, &target, &mut |_| {}).is_err());
    assert!(!dir.path().join("typo.db").exists());
}

#[derive(QueryableByName)]
struct Id {
    #[diesel(sql_type = BigInt)]
    id: i64,
}

/// The id the next category gets.
fn next_category_id(config: &StoreConfig) -> i64 {
    let insert = "INSERT INTO categories (name, name_key) VALUES ('Next', 'next') RETURNING id";
    let row: Id = if is_postgres(config) {
        diesel::sql_query(insert)
            .get_result(&mut connect_postgres(config).unwrap())
            .unwrap()
    } else {
        diesel::sql_query(insert)
            .get_result(&mut connect(config).unwrap())
            .unwrap()
    };
    row.id
}

/// A category deleted before the move keeps its id to itself after it, on either backend.
#[test]
fn a_copy_goes_on_past_every_id_the_source_gave_deleted_ones_too() {
    let dir = tempfile::tempdir().unwrap();
    let source = StoreConfig::new(dir.path().join("source.db"));
    migrate(&source).unwrap();
    execute(
        &source,
        "INSERT INTO categories (name, name_key) VALUES ('A', 'a'), ('B', 'b'), ('C', 'c');
         DELETE FROM categories WHERE id = 3;",
    );
    let mut targets = vec![(StoreConfig::new(dir.path().join("target.db")), None)];
    if let Some(scratch) = ScratchPostgres::create() {
        targets.push((scratch.config(), Some(scratch)));
    }
    for (target, _scratch) in targets {
        let mut heard = Vec::new();
        let copied = copy(&source, &target, &mut |step| heard.push(step)).unwrap();
        assert_eq!(copied.0[0], ("categories", 2));
        assert_eq!(copied.total(), 2);
        assert!(!heard.is_empty());
        assert_eq!(check(&target).unwrap(), Vec::<String>::new());
        assert_eq!(next_category_id(&target), 4, "{}", target.database);
    }
}

/// A PostgreSQL source may hold events that committed and were not yet given their place in
/// the feed (`pending_events`): a copy takes them along, after every stamped event, in the
/// order they were written, and the target's feed goes on above them.
#[test]
fn a_copy_takes_the_events_not_yet_in_the_feed_along() {
    use petstore_core::Store;
    let Some(source) = ScratchPostgres::create() else {
        return;
    };
    let from = source.config();
    migrate(&from).unwrap();
    execute(
        &from,
        "INSERT INTO pending_events (time, type, subject, data) \
         VALUES (now(), 'category.deleted', 'categories/1', '{\"id\": 1}'); \
         SELECT stamp_events(); \
         INSERT INTO pending_events (time, type, subject, data) \
         VALUES (now(), 'category.deleted', 'categories/2', '{\"id\": 2}'), \
                (now(), 'category.deleted', 'categories/3', '{\"id\": 3}');",
    );
    let dir = tempfile::tempdir().unwrap();
    let to = StoreConfig::new(dir.path().join("copy.db"));
    let copied = copy(&from, &to, &mut |_| {}).unwrap();
    assert!(copied.0.contains(&("events", 3)), "{copied:?}");
    let target = petstore_store::SqliteStore::open(&to).unwrap();
    let feed = target.read(|s| s.events_after(None, 10)).unwrap();
    let seen: Vec<(i64, &str)> = feed
        .iter()
        .map(|e| (e.id.get(), e.subject.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            (1, "categories/1"),
            (2, "categories/2"),
            (3, "categories/3")
        ]
    );
    assert_eq!(check(&to).unwrap(), Vec::<String>::new());
}

//! The migrations apply, revert and apply again on a real file and a real PostgreSQL database,
//! and the schema is usable after.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use crate::common;

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::sql_types::Text;
use diesel_migrations::MigrationHarness;
use petstore_core::testkit::scenarios::Fixture;
use petstore_store::testing::ScratchPostgres;
use petstore_store::{
    MIGRATIONS, PG_MIGRATIONS, PgStore, SqliteStore, StoreConfig, connect, connect_postgres,
    migrate,
};

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
    // The last migrations finish an upgrade: a node serves while they wait for
    // `migrate --finish`.
    let finishes = |version: &str| version[version.len() - 6..].starts_with('9');
    let finishing = conn.revert_last_migration(MIGRATIONS).unwrap();
    assert!(finishes(&finishing.to_string()), "{finishing}");
    loop {
        store.store.check_ready().unwrap();
        let reverted = conn.revert_last_migration(MIGRATIONS).unwrap().to_string();
        if !finishes(&reverted) {
            break;
        }
    }
    // One that only adds, missing, is not a schema this version can serve.
    assert!(store.store.check_ready().is_err());
}

#[derive(QueryableByName)]
struct TableName {
    #[diesel(sql_type = Text)]
    table_name: String,
}

/// The tables, functions and triggers of the public schema, but Diesel's own table.
fn pg_objects(conn: &mut PgConnection) -> Vec<String> {
    diesel::sql_query(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' \
           AND table_name <> '__diesel_schema_migrations' \
         UNION ALL SELECT routine_name FROM information_schema.routines \
           WHERE routine_schema = 'public' \
         UNION ALL SELECT trigger_name || ' on ' || event_object_table || ' ' || event_manipulation \
           FROM information_schema.triggers WHERE trigger_schema = 'public' \
         ORDER BY 1",
    )
    .load::<TableName>(conn)
    .unwrap()
    .into_iter()
    .map(|n| n.table_name)
    .collect()
}

#[test]
fn all_up_all_down_all_up_again_on_postgres() {
    let Some(database) = ScratchPostgres::create() else {
        return;
    };
    let config = database.config();
    let applied = migrate(&config).unwrap();
    assert!(!applied.is_empty(), "a new database gets every migration");
    let mut conn = connect_postgres(&config).unwrap();
    let schema = pg_objects(&mut conn);
    for table in [
        "categories",
        "pets",
        "orders",
        "events",
        "api_keys",
        "webhooks",
    ] {
        assert!(
            schema.contains(&table.to_owned()),
            "{table} exists: {schema:?}"
        );
    }

    conn.revert_all_migrations(PG_MIGRATIONS).unwrap();
    assert_eq!(
        pg_objects(&mut conn),
        Vec::<String>::new(),
        "down removes everything up made"
    );

    conn.run_pending_migrations(PG_MIGRATIONS).unwrap();
    assert_eq!(
        pg_objects(&mut conn),
        schema,
        "up again gives the same schema"
    );
    assert!(
        migrate(&config).unwrap().is_empty(),
        "nothing is pending after"
    );
    drop(conn);

    let store = PgStore::open(&config).unwrap();
    store.check_ready().unwrap();
    let fixture = Fixture::new(store);
    let pet = fixture.pet_with_stock("Rex", 2);
    fixture.order(pet.id, 1).unwrap();
}

#[test]
fn the_postgres_schema_refuses_what_the_rules_refuse() {
    let Some(database) = ScratchPostgres::create() else {
        return;
    };
    let config = database.config();
    let fixture = Fixture::new(PgStore::open(&config).unwrap());
    let pet = fixture.pet_with_stock("Rex", 1);
    fixture.order(pet.id, 1).unwrap();
    let mut conn = connect_postgres(&config).unwrap();
    conn.batch_execute(
        "INSERT INTO api_keys (name, role, prefix, hash, created_at) \
         VALUES ('k', 'admin', 'p', decode(repeat('00', 32), 'hex'), now())",
    )
    .unwrap();
    let id = pet.id.get();
    for refused in [
        format!("UPDATE pets SET stock = -1 WHERE id = {id}"),
        format!("DELETE FROM pets WHERE id = {id}"),
        "INSERT INTO orders (pet_id, quantity) VALUES (999, 1)".to_owned(),
        "INSERT INTO categories (name, name_key) VALUES ('DOGS', 'dogs')".to_owned(),
        "DELETE FROM api_keys".to_owned(),
        "INSERT INTO api_keys (name, role, prefix, hash, created_at) \
         VALUES ('k', 'root', 'p', decode(repeat('00', 32), 'hex'), now())"
            .to_owned(),
        format!("UPDATE pets SET status = 'lost' WHERE id = {id}"),
    ] {
        assert!(
            conn.batch_execute(&refused).is_err(),
            "the schema refuses {refused}"
        );
    }
}

/// `000016`: this version counts each order into its pet once, itself; an order inserted by a
/// transaction that does not say its writer counts it (an older version's node's) is counted
/// by the trigger, as before.
#[test]
fn an_older_nodes_orders_are_counted_by_the_trigger_and_this_versions_once() {
    let Some(database) = ScratchPostgres::create() else {
        return;
    };
    let config = database.config();
    let fixture = Fixture::new(PgStore::open(&config).unwrap());
    let pet = fixture.pet_with_stock("Rex", 5);
    fixture.order(pet.id, 2).unwrap();
    let mut conn = connect_postgres(&config).unwrap();
    let id = pet.id.get();
    let counts = |conn: &mut PgConnection| {
        diesel::sql_query(format!(
            "SELECT open_orders || '/' || committed AS name FROM pets WHERE id = {id}"
        ))
        .load::<Name>(conn)
        .unwrap()
        .into_iter()
        .map(|n| n.name)
        .collect::<Vec<_>>()
    };
    assert_eq!(
        counts(&mut conn),
        ["1/2"],
        "the service's order, counted once"
    );

    conn.batch_execute(&format!(
        "INSERT INTO orders (pet_id, quantity) VALUES ({id}, 1)"
    ))
    .unwrap();
    assert_eq!(
        counts(&mut conn),
        ["2/3"],
        "an older node's order, counted by the trigger"
    );

    conn.batch_execute(&format!(
        "BEGIN; SET LOCAL petstore.orders_counted_by_writer = 'on'; \
         INSERT INTO orders (pet_id, quantity) VALUES ({id}, 1); COMMIT"
    ))
    .unwrap();
    assert_eq!(
        counts(&mut conn),
        ["2/3"],
        "an order whose writer counts it is left to the writer"
    );
}

#[test]
fn ten_nodes_starting_at_once_migrate_once() {
    let Some(database) = ScratchPostgres::create() else {
        return;
    };
    let config = database.config();
    let applied: Vec<Vec<String>> = std::thread::scope(|scope| {
        let starts: Vec<_> = (0..10)
            .map(|_| scope.spawn(|| migrate(&config).unwrap()))
            .collect();
        starts.into_iter().map(|s| s.join().unwrap()).collect()
    });
    let total: usize = applied.iter().map(Vec::len).sum();
    let migrations =
        diesel::migration::MigrationSource::<diesel::pg::Pg>::migrations(&PG_MIGRATIONS)
            .unwrap()
            .len();
    assert_eq!(total, migrations, "each migration applied exactly once");
}

fn texts(conn: &mut SqliteConnection, sql: &str) -> Vec<String> {
    diesel::sql_query(sql)
        .load::<Name>(conn)
        .unwrap()
        .into_iter()
        .map(|n| n.name)
        .collect()
}

/// Times as every version before fixed-width times wrote them: as many fraction digits as
/// the value needed.
const OLD_TIMES: [&str; 4] = [
    "2026-11-24T20:45:05Z",
    "2026-11-24T20:45:05.500Z",
    "2026-11-24T20:45:05.123456Z",
    "2026-11-24T20:45:05.123456789Z",
];

#[test]
fn times_of_rows_written_before_become_fixed_width_and_back_and_again() {
    use petstore_core::Store;

    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig::new(dir.path().join("times.db"));
    migrate(&config).unwrap();
    let mut conn = connect(&config).unwrap();
    // Back to before 000009_fixed_width_times, whatever came after it.
    while conn.revert_last_migration(MIGRATIONS).unwrap().to_string() != "20261124000009" {}
    for (n, time) in OLD_TIMES.iter().enumerate() {
        conn.batch_execute(&format!(
            "INSERT INTO events (time, type, subject, data) VALUES ('{time}', 'pet.created', '{n}', '{{}}'); \
             INSERT INTO idempotency_records (owner_id, idempotency_key, fingerprint, response, recorded_at) \
             VALUES (1, 'key-{n}', zeroblob(32), x'00', '{time}');"
        ))
        .unwrap();
    }
    let events = "SELECT time AS name FROM events ORDER BY id";
    let fixed = [
        "2026-11-24T20:45:05.000000Z",
        "2026-11-24T20:45:05.500000Z",
        "2026-11-24T20:45:05.123456Z",
        "2026-11-24T20:45:05.123456Z",
    ];

    conn.run_next_migration(MIGRATIONS).unwrap();
    assert_eq!(texts(&mut conn, events), fixed, "up: one width");
    assert_eq!(
        texts(
            &mut conn,
            "SELECT recorded_at AS name FROM idempotency_records ORDER BY recorded_at"
        ),
        [fixed[0], fixed[2], fixed[3], fixed[1]],
        "text order is time order"
    );
    conn.revert_last_migration(MIGRATIONS).unwrap();
    assert_eq!(
        texts(&mut conn, events),
        [OLD_TIMES[0], OLD_TIMES[1], OLD_TIMES[2], OLD_TIMES[2]],
        "down: the shortest form again, to the microsecond"
    );
    conn.run_next_migration(MIGRATIONS).unwrap();
    assert_eq!(texts(&mut conn, events), fixed, "up again");
    drop(conn);

    // The store reads them as the times they were, and compares them as times.
    let store = SqliteStore::open(&config).unwrap();
    let read = store.read(|s| s.events_after(None, 10)).unwrap();
    let expected: Vec<chrono::DateTime<chrono::Utc>> =
        fixed.iter().map(|t| t.parse().unwrap()).collect();
    assert_eq!(read.iter().map(|e| e.time).collect::<Vec<_>>(), expected);
    let half_past: chrono::DateTime<chrono::Utc> = "2026-11-24T20:45:05.25Z".parse().unwrap();
    store
        .write(|tx| tx.purge_idempotency_records(half_past))
        .unwrap();
    let mut conn = connect(&config).unwrap();
    assert_eq!(
        texts(
            &mut conn,
            "SELECT recorded_at AS name FROM idempotency_records ORDER BY recorded_at"
        ),
        [fixed[1]],
        "only the record from after the boundary is kept"
    );
}

/// `serve` and `migrate` create a PostgreSQL database that does not exist, as they create a
/// missing SQLite file; a command that must not (`keys`) refuses it and creates nothing.
#[test]
fn a_missing_postgres_database_is_created_by_migrate_and_refused_by_keys() {
    let Some(scratch) = ScratchPostgres::create() else {
        return;
    };
    scratch.remove();
    let mut refused = scratch.config();
    refused.create = false;
    let error = migrate(&refused).unwrap_err().to_string();
    assert!(error.contains("does not exist"), "{error}");
    assert!(connect_postgres(&refused).is_err(), "nothing created");

    let versions = migrate(&scratch.config()).unwrap();
    assert!(!versions.is_empty(), "created, then migrated");
    assert!(connect_postgres(&scratch.config()).is_ok());
    assert_eq!(migrate(&scratch.config()).unwrap(), Vec::<String>::new());
}

/// `000023` makes `events` again without its `json_valid` check: its sequence goes with it, so
/// an id given to an event that was deleted since is not given again, up or down.
#[test]
fn the_outbox_made_again_keeps_its_sequence_up_and_down() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig::new(dir.path().join("sequence.db"));
    migrate(&config).unwrap();
    let mut conn = connect(&config).unwrap();
    // Back to before 000023, whatever came after it.
    while conn.revert_last_migration(MIGRATIONS).unwrap().to_string() != "20261129000023" {}
    let append = |conn: &mut SqliteConnection, n: usize| {
        conn.batch_execute(&format!(
            "INSERT INTO events (time, type, subject, data) \
             VALUES ('2026-11-30T00:00:00.000000Z', 'pet.created', '{n}', '{{}}')"
        ))
        .unwrap();
    };
    let ids = "SELECT CAST(id AS TEXT) AS name FROM events ORDER BY id";
    for n in 1..=3 {
        append(&mut conn, n);
    }
    conn.batch_execute("DELETE FROM events WHERE id = 3")
        .unwrap();

    conn.run_next_migration(MIGRATIONS).unwrap();
    append(&mut conn, 4);
    assert_eq!(
        texts(&mut conn, ids),
        ["1", "2", "4"],
        "up: 3 is not given again"
    );

    conn.batch_execute("DELETE FROM events").unwrap();
    conn.revert_last_migration(MIGRATIONS).unwrap();
    append(&mut conn, 5);
    assert_eq!(
        texts(&mut conn, ids),
        ["5"],
        "down, emptied: still no id given twice"
    );
}

/// `000024` makes `order_lines` and `idempotency_records` again: what was in them stays, up
/// and down; a line's key to its order is checked at the commit, and still refuses a line
/// whose order is missing; deleting an order still deletes its lines.
#[test]
fn lines_and_key_records_made_again_keep_their_rows_and_rules() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig::new(dir.path().join("lines.db"));
    migrate(&config).unwrap();
    let mut conn = connect(&config).unwrap();
    conn.batch_execute("PRAGMA foreign_keys = ON").unwrap();
    while conn.revert_last_migration(MIGRATIONS).unwrap().to_string() != "20261129000024" {}
    conn.batch_execute(
        "INSERT INTO categories (id, name, name_key) VALUES (1, 'Dogs', 'dogs');
         INSERT INTO pets (id, name, name_key, category_id, status, stock, open_orders, committed)
         VALUES (1, 'Rex', 'rex', 1, 'available', 5, 0, 0), (2, 'Fido', 'fido', 1, 'available', 5, 1, 2);
         -- Line 1 is counted by the orders' trigger, line 2 by the service (as `000020`).
         INSERT INTO orders (id, pet_id, quantity, line_count) VALUES (7, 1, 1, 2);
         INSERT INTO order_lines (order_id, line_no, pet_id, quantity) VALUES (7, 2, 2, 2);
         INSERT INTO idempotency_records (owner_id, idempotency_key, fingerprint, response,
             recorded_at)
         VALUES (3, 'k-1', zeroblob(32), CAST('{}' AS BLOB), '2026-11-30T00:00:00.000000Z');",
    )
    .unwrap();
    let lines = "SELECT order_id || '/' || line_no || '/' || pet_id || '/' || quantity AS name \
                 FROM order_lines";
    let records = "SELECT owner_id || '/' || idempotency_key || '/' || recorded_at AS name \
                   FROM idempotency_records";
    let kept = |conn: &mut SqliteConnection, when: &str| {
        assert_eq!(texts(conn, lines), ["7/2/2/2"], "{when}: the line stays");
        assert_eq!(
            texts(conn, records),
            ["3/k-1/2026-11-30T00:00:00.000000Z"],
            "{when}: the record stays"
        );
    };

    conn.run_next_migration(MIGRATIONS).unwrap();
    kept(&mut conn, "up");
    let orphan = conn.batch_execute(
        "BEGIN; INSERT INTO order_lines (order_id, line_no, pet_id, quantity) \
         VALUES (8, 2, 2, 1);",
    );
    assert!(orphan.is_ok(), "the key is not checked by the statement");
    assert!(
        conn.batch_execute("COMMIT").is_err(),
        "a line whose order is missing is refused at the commit"
    );
    conn.batch_execute("ROLLBACK").unwrap();
    kept(&mut conn, "after the refused line");

    conn.revert_last_migration(MIGRATIONS).unwrap();
    kept(&mut conn, "down");
    conn.run_next_migration(MIGRATIONS).unwrap();
    conn.batch_execute("DELETE FROM orders WHERE id = 7")
        .unwrap();
    assert!(
        texts(&mut conn, lines).is_empty(),
        "deleting the order deleted its line"
    );
    assert_eq!(
        texts(
            &mut conn,
            "SELECT open_orders || '/' || committed AS name FROM pets ORDER BY id"
        ),
        ["0/0", "0/0"],
        "each line's pet gave the order and its units up"
    );
}

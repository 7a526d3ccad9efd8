//! Moving a shop's data with the binary: `petstore copy` from SQLite to PostgreSQL and back,
//! `petstore check`. The copy must answer every list the API serves exactly as the original
//! did, keep keys, idempotency records and event ids working, and refuse a target with rows.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use crate::binary;

use std::process::Output;

use binary::{Server, petstore, send_to, serve_with};
use petstore_store::testing::{ScratchPostgres, postgres_configured};
use serde_json::Value;

const ADMIN: &str = "moving-admin-0123456789abcdef0123456789a";

fn call(server: &Server, key: &str, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    call_at(&server.address, key, method, path, &[], body)
}

fn call_at(
    address: &str,
    key: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> (u16, Value) {
    let (status, text) = send_to(address, method, path, key, headers, body).expect("an answer");
    let value = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    };
    (status, value)
}

fn made(server: &Server, key: &str, path: &str, body: &str) -> Value {
    let (status, value) = call(server, key, "POST", path, Some(body));
    assert_eq!(status, 201, "{path} {body}: {value}");
    value
}

/// What a shop's clients can see, list by list, as each caller sees it.
fn everything(server: &Server, customer: &str) -> Vec<(String, Value)> {
    let lists = [
        (ADMIN, "/v1/categories?limit=100"),
        (ADMIN, "/v1/pets?limit=100"),
        (ADMIN, "/v1/inventory?limit=100"),
        (ADMIN, "/v1/store/orders?limit=100"),
        (customer, "/v1/store/orders?limit=100"),
        (ADMIN, "/v1/keys?limit=100"),
        (ADMIN, "/v1/webhooks?limit=100"),
        (ADMIN, "/v1/webhooks/1/deliveries?limit=100"),
        (ADMIN, "/v1/events?after=0&limit=100"),
    ];
    lists
        .into_iter()
        .map(|(key, path)| {
            let (status, value) = call(server, key, "GET", path, None);
            assert_eq!(status, 200, "{path}: {value}");
            (format!("{path} as {}", &key[..8]), value)
        })
        .collect()
}

/// Waits until the subscription's first attempt has failed: its state then stays put (the
/// next attempt is 100 s away), so the original's lists are final before it stops.
fn await_failed_attempt(server: &Server) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (_, hooks) = call(server, ADMIN, "GET", "/v1/webhooks", None);
        if hooks[0]["delivery"]["failedAttempts"].as_u64() >= Some(1) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "no attempt: {hooks}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// An event's id, which the feed writes as a string (CloudEvents).
fn event_id(event: &Value) -> i64 {
    event["id"].as_str().and_then(|id| id.parse().ok()).unwrap()
}

fn copy(from: &str, to: &str) -> Output {
    petstore("unused.db")
        .env_remove("PETSTORE_DATABASE")
        .args(["copy", "--from", from, "--to", to])
        .output()
        .unwrap()
}

fn assert_succeeded(output: &Output) {
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn check(database: &str) -> Output {
    petstore(database).arg("check").output().unwrap()
}

/// A shop with every kind of row, filled through the API.
struct Shop {
    customer: String,
    revoked: String,
    order_body: String,
    idempotent_order: Value,
}

/// A new pet of `category` with `stock` units: its id.
fn pet_with_stock(server: &Server, category: &Value, name: &str, stock: i64) -> i64 {
    let pet = made(
        server,
        ADMIN,
        "/v1/pets",
        &format!(r#"{{"name": "{name}", "categoryId": {category}}}"#),
    )["id"]
        .as_i64()
        .unwrap();
    let (status, _) = call(
        server,
        ADMIN,
        "PATCH",
        &format!("/v1/inventory/{pet}"),
        Some(&format!(r#"{{"quantity": {stock}}}"#)),
    );
    assert_eq!(status, 200);
    pet
}

fn fill(server: &Server) -> Shop {
    let dogs = made(server, ADMIN, "/v1/categories", r#"{"name": "Dogs"}"#)["id"].clone();
    made(
        server,
        ADMIN,
        "/v1/categories",
        r#"{"name": "Cats", "description": "Aloof"}"#,
    );
    let pets: Vec<i64> = ["Rex", "Fido", "Gone"]
        .into_iter()
        .map(|name| pet_with_stock(server, &dogs, name, 10))
        .collect();
    let customer = made(
        server,
        ADMIN,
        "/v1/keys",
        r#"{"name": "Ann", "role": "customer"}"#,
    )["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let revoked_key = made(
        server,
        ADMIN,
        "/v1/keys",
        r#"{"name": "Old", "role": "staff"}"#,
    );
    let revoked = revoked_key["key"].as_str().unwrap().to_owned();
    let (status, _) = call(
        server,
        ADMIN,
        "DELETE",
        &format!("/v1/keys/{}", revoked_key["id"]),
        None,
    );
    assert_eq!(status, 204);

    // A subscription made now starts after the events so far; the ones below wait for it,
    // their attempts failing (nothing listens there): part way through its deliveries.
    made(
        server,
        ADMIN,
        "/v1/webhooks",
        r#"{"url": "http://127.0.0.1:9/hook", "events": ["order.placed", "pet.deleted"]}"#,
    );
    let order_body = format!(r#"{{"petId": {}, "quantity": 2}}"#, pets[0]);
    let (status, idempotent_order) = call_at(
        &server.address,
        &customer,
        "POST",
        "/v1/store/orders",
        &[("Idempotency-Key", "ann-1")],
        Some(&order_body),
    );
    assert_eq!(status, 201, "{idempotent_order}");
    let complete = made(
        server,
        ADMIN,
        "/v1/store/orders",
        &format!(r#"{{"petId": {}, "quantity": 1}}"#, pets[2]),
    );
    let (status, _) = call(
        server,
        ADMIN,
        "PATCH",
        &format!("/v1/store/orders/{}", complete["id"]),
        Some(r#"{"complete": true}"#),
    );
    assert_eq!(status, 200);
    // A complete order outlives its pet.
    let (status, gone) = call(
        server,
        ADMIN,
        "DELETE",
        &format!("/v1/pets/{}", pets[2]),
        None,
    );
    assert_eq!(status, 204, "{gone}");
    made(
        server,
        ADMIN,
        "/v1/store/orders",
        &format!(r#"{{"petId": {}, "quantity": 3}}"#, pets[1]),
    );
    Shop {
        customer,
        revoked,
        order_body,
        idempotent_order,
    }
}

/// SQLite to PostgreSQL (`copy`) to SQLite (`backup`): each copy answers every list as the original did, its keys
/// authenticate (a revoked one stays refused), an idempotency key used before the move replays
/// the same order, and the next event's id is above every copied one. A second copy into the
/// same target is refused, naming a table, and changes nothing.
#[test]
fn a_shop_moved_to_postgres_and_back_answers_as_it_did() {
    if !postgres_configured() {
        eprintln!("skipped: PETSTORE_TEST_POSTGRES_URL names no PostgreSQL server");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("original.db");
    let returned = dir.path().join("returned.db");
    let postgres = ScratchPostgres::create().unwrap();
    let flags = [
        "--webhook-allow-private-targets",
        "--webhook-first-retry-ms",
        "100000",
    ];

    let mut server = serve_with(&original, Some(ADMIN), &flags);
    let shop = fill(&server);
    await_failed_attempt(&server);
    let before = everything(&server, &shop.customer);
    for list in ["deliveries", "/v1/events", "/v1/keys"] {
        let (name, items) = before.iter().find(|(name, _)| name.contains(list)).unwrap();
        assert!(
            !items.as_array().unwrap().is_empty(),
            "{name} has rows to copy"
        );
    }
    let (code, _) = server.stop();
    assert_eq!(code, Some(0));
    let checked = check(original.to_str().unwrap());
    assert_succeeded(&checked);

    assert_succeeded(&copy(original.to_str().unwrap(), postgres.url()));
    // Back by a backup of the PostgreSQL database: a portable SQLite file.
    let backup = |file: &std::path::Path| {
        petstore(postgres.url())
            .arg("backup")
            .arg(file)
            .output()
            .unwrap()
    };
    let backed_up = backup(&returned);
    assert_succeeded(&backed_up);
    let listed = String::from_utf8_lossy(&backed_up.stdout);
    assert!(listed.contains("api_keys 3\n"), "rows per table: {listed}");
    let again = backup(&returned);
    assert!(!again.status.success(), "a backup never overwrites a file");
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists"));
    assert_succeeded(&check(postgres.url()));
    assert_succeeded(&check(returned.to_str().unwrap()));

    let refused = copy(original.to_str().unwrap(), returned.to_str().unwrap());
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("not empty") && said.contains("categories"),
        "{said}"
    );

    for database in [postgres.url(), returned.to_str().unwrap()] {
        let mut server = serve_with(database, None, &flags);
        assert_eq!(
            everything(&server, &shop.customer),
            before,
            "{database} answers as the original did"
        );
        let (status, _) = call(&server, &shop.revoked, "GET", "/v1/pets", None);
        assert_eq!(status, 401, "a revoked key stays refused on {database}");
        let (status, replayed) = call_at(
            &server.address,
            &shop.customer,
            "POST",
            "/v1/store/orders",
            &[("Idempotency-Key", "ann-1")],
            Some(&shop.order_body),
        );
        assert_eq!(status, 201, "{replayed}");
        assert_eq!(
            replayed, shop.idempotent_order,
            "replayed, not placed again"
        );
        let last_copied = before
            .iter()
            .find(|(name, _)| name.starts_with("/v1/events"))
            .and_then(|(_, events)| events.as_array().unwrap().last())
            .map(event_id)
            .unwrap();
        made(&server, ADMIN, "/v1/categories", r#"{"name": "Birds"}"#);
        let (status, events) = call(
            &server,
            ADMIN,
            "GET",
            &format!("/v1/events?after={last_copied}"),
            None,
        );
        assert_eq!(status, 200);
        let new = events.as_array().unwrap();
        assert_eq!(new.len(), 1, "{events}");
        assert!(event_id(&new[0]) > last_copied, "{events}");
        server.stop();
    }
}

/// The move from SQLite to PostgreSQL as `docs/deployment.md` ("Moving to PostgreSQL") tells
/// it, step by step: writes stopped (the service stopped), the file checked, `copy` into a
/// database that does not exist yet (it creates it), the service started on the URL. Nothing
/// acknowledged is lost, and the copy left the file as it was, so the way back before any
/// write on PostgreSQL is to start on the file again; after writes there, a copy back.
#[test]
fn the_cut_over_to_postgres_loses_nothing_and_can_be_rolled_back() {
    if !postgres_configured() {
        eprintln!("skipped: PETSTORE_TEST_POSTGRES_URL names no PostgreSQL server");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shop.db");
    let file = file.to_str().unwrap();
    let flags = [
        "--webhook-allow-private-targets",
        "--webhook-first-retry-ms",
        "100000",
    ];
    // 1. The shop on SQLite, then writes stopped: the service stopped.
    let mut server = serve_with(file, Some(ADMIN), &flags);
    let shop = fill(&server);
    await_failed_attempt(&server);
    let before = everything(&server, &shop.customer);
    assert_eq!(server.stop().0, Some(0));
    let file_bytes =
        || ["", "-wal"].map(|end| std::fs::read(format!("{file}{end}")).unwrap_or_default());
    let stopped = file_bytes();
    // 2. Checked, and copied into a database that does not exist yet.
    assert_succeeded(&check(file));
    let target = ScratchPostgres::create().unwrap();
    target.remove();
    assert_succeeded(&copy(file, target.url()));
    assert_eq!(file_bytes(), stopped, "the copy only read the file");
    assert_succeeded(&check(target.url()));
    // 3. The switch: the same service on the URL answers as the file did, and takes writes.
    let mut server = serve_with(target.url(), None, &flags);
    assert_eq!(everything(&server, &shop.customer), before);
    made(&server, ADMIN, "/v1/categories", r#"{"name": "Moved"}"#);
    let after_move = everything(&server, &shop.customer);
    assert_eq!(server.stop().0, Some(0));
    // 4. The way back before that write: the file, as it was.
    let mut server = serve_with(file, None, &flags);
    assert_eq!(everything(&server, &shop.customer), before);
    assert_eq!(server.stop().0, Some(0));
    // 5. The way back after it: PostgreSQL copied into a new file, the write with it.
    let back = dir.path().join("back.db");
    let back = back.to_str().unwrap();
    assert_succeeded(&copy(target.url(), back));
    let mut server = serve_with(back, None, &flags);
    assert_eq!(everything(&server, &shop.customer), after_move);
    assert_eq!(server.stop().0, Some(0));
}

/// A new SQLite database at `path`, migrated and empty.
fn migrated(path: &std::path::Path) -> petstore_store::StoreConfig {
    let config = petstore_store::StoreConfig::new(path);
    petstore_store::migrate(&config).unwrap();
    config
}

/// A source big enough that a copy takes seconds: 300,000 events.
fn big_source(path: &std::path::Path) {
    use diesel::connection::SimpleConnection;
    let config = migrated(path);
    petstore_store::connect(&config)
        .unwrap()
        .batch_execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300000)
             INSERT INTO events (time, type, subject, data)
             SELECT '2026-11-24T12:00:00.000000Z', 'category.created', 'categories/' || i,
                    '{\"id\": ' || i || ', \"name\": \"Category ' || i || '\"}'
             FROM n;
             INSERT INTO categories (name, name_key) VALUES ('Dogs', 'dogs');",
        )
        .unwrap();
}

/// A copy killed while it writes leaves its target without a row: the next copy into it is
/// taken (a target with any row is refused), and completes.
#[test]
fn a_copy_killed_half_way_leaves_its_target_empty() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("big.db");
    big_source(&source);
    let source = source.to_str().unwrap();
    let scratch = ScratchPostgres::create();
    let sqlite_target = dir.path().join("target.db");
    let mut targets = vec![sqlite_target.to_str().unwrap().to_owned()];
    match &scratch {
        Some(postgres) => targets.push(postgres.url().to_owned()),
        None => eprintln!("skipped the PostgreSQL target: PETSTORE_TEST_POSTGRES_URL is not set"),
    }
    for target in targets {
        let mut child = petstore("unused.db")
            .env_remove("PETSTORE_DATABASE")
            .args(["copy", "--from", source, "--to", &target])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        for line in stderr.lines() {
            let line = line.unwrap();
            if line.contains(r#""table":"events""#) {
                break;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(
            child.try_wait().unwrap().is_none(),
            "the copy is still writing when it is killed"
        );
        child.kill().unwrap();
        child.wait().unwrap();

        let again = copy(source, &target);
        assert_succeeded(&again);
        let copied = String::from_utf8_lossy(&again.stdout);
        assert!(copied.contains("events 300000"), "{copied}");
        assert_succeeded(&check(&target));
    }
}

/// Clients writing at once while a backup runs.
const WRITERS: usize = 16;
/// Pets the orders spread over.
const ORDERED_PETS: usize = 20;
const UNITS: i64 = 1_000_000;

/// What one writer was told: orders placed (id, pet, quantity) and the stock it last set on
/// its own pet, each with when the answer came.
#[derive(Default)]
struct Acknowledged {
    orders: Vec<(std::time::Instant, i64, i64, i64)>,
    stocks: Vec<(std::time::Instant, i64)>,
    failures: Vec<String>,
}

/// A backup taken while 16 clients place orders and set stock: the service answers every
/// write as it would without it, and the backup is one consistent snapshot that holds every
/// write acknowledged before it started, passes `check`, and serves as it is.
#[test]
fn a_backup_under_write_load_holds_every_earlier_write_and_stops_none() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Instant;
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("busy.db");
    let backup = dir.path().join("backup.db");
    let server = serve_with(&database, Some(ADMIN), &["--rate-limit", "1000000"]);
    let dogs = made(&server, ADMIN, "/v1/categories", r#"{"name": "Dogs"}"#)["id"].clone();
    let new_pet = |name: String, stock: i64| pet_with_stock(&server, &dogs, &name, stock);
    let ordered: Vec<i64> = (0..ORDERED_PETS)
        .map(|n| new_pet(format!("Ordered {n}"), UNITS))
        .collect();
    let restocked: Vec<i64> = (0..WRITERS)
        .map(|n| new_pet(format!("Restocked {n}"), 0))
        .collect();

    let writing = AtomicBool::new(true);
    let (told, backup_started, backup_output) = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|client| {
                let (address, writing, ordered, own) = (
                    server.address.as_str(),
                    &writing,
                    &ordered,
                    restocked[client],
                );
                scope.spawn(move || {
                    let mut told = Acknowledged::default();
                    for n in 0_i64.. {
                        if !writing.load(Ordering::Relaxed) {
                            break;
                        }
                        if n % 4 == 3 {
                            let (status, item) = call_at(
                                address,
                                ADMIN,
                                "PATCH",
                                &format!("/v1/inventory/{own}"),
                                &[],
                                Some(&format!(r#"{{"quantity": {}}}"#, n + 1)),
                            );
                            match status {
                                200 => told.stocks.push((Instant::now(), n + 1)),
                                _ => told.failures.push(format!("{status} {item}")),
                            }
                        } else {
                            let pet =
                                ordered[(client * 7 + usize::try_from(n).unwrap()) % ordered.len()];
                            let quantity = 1 + n % 3;
                            let (status, order) = call_at(
                                address,
                                ADMIN,
                                "POST",
                                "/v1/store/orders",
                                &[],
                                Some(&format!(r#"{{"petId": {pet}, "quantity": {quantity}}}"#)),
                            );
                            match status {
                                201 => told.orders.push((
                                    Instant::now(),
                                    order["id"].as_i64().unwrap(),
                                    pet,
                                    quantity,
                                )),
                                _ => told.failures.push(format!("{status} {order}")),
                            }
                        }
                    }
                    told
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(700));
        let started = Instant::now();
        let output = petstore(&database)
            .args(["backup"])
            .arg(&backup)
            .output()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        writing.store(false, Ordering::Relaxed);
        let told: Vec<Acknowledged> = writers.into_iter().map(|w| w.join().unwrap()).collect();
        (told, started, output)
    });
    assert_succeeded(&backup_output);
    let failures: Vec<&String> = told.iter().flat_map(|t| &t.failures).collect();
    assert!(
        failures.is_empty(),
        "every write answered as without a backup: {failures:?}"
    );
    let after: usize = told
        .iter()
        .map(|t| {
            t.orders
                .iter()
                .filter(|(at, ..)| *at > backup_started)
                .count()
        })
        .sum();
    assert!(after > 0, "the clients went on writing during the backup");
    let listed = String::from_utf8_lossy(&backup_output.stdout);
    assert!(listed.contains("orders "), "rows per table: {listed}");
    assert_succeeded(&check(backup.to_str().unwrap()));
    drop(server);

    // The backup, served as it is: every order acknowledged before it began is there, and
    // each pet's stock and orders add up (one snapshot, not tables read at different times).
    let copy = serve_with(&backup, None, &[]);
    let mut orders = std::collections::BTreeMap::new();
    let mut cursor = String::new();
    loop {
        let (status, page) = call(
            &copy,
            ADMIN,
            "GET",
            &format!("/v1/store/orders?limit=100{cursor}"),
            None,
        );
        assert_eq!(status, 200, "{page}");
        let page = page.as_array().unwrap();
        for order in page {
            orders.insert(
                order["id"].as_i64().unwrap(),
                (
                    order["petId"].as_i64().unwrap(),
                    order["quantity"].as_i64().unwrap(),
                ),
            );
        }
        match page.last() {
            Some(last) if page.len() == 100 => {
                cursor = format!("&cursor=k{:x}", last["id"].as_i64().unwrap())
            }
            _ => break,
        }
    }
    for (at, id, pet, quantity) in told.iter().flat_map(|t| &t.orders) {
        if *at < backup_started {
            assert_eq!(
                orders.get(id),
                Some(&(*pet, *quantity)),
                "order {id}, acknowledged before the backup"
            );
        }
    }
    for pet in &ordered {
        let (status, item) = call(&copy, ADMIN, "GET", &format!("/v1/inventory/{pet}"), None);
        assert_eq!(status, 200);
        let ordered_units: i64 = orders
            .values()
            .filter(|(p, _)| p == pet)
            .map(|(_, q)| q)
            .sum();
        assert_eq!(
            item["quantity"].as_i64().unwrap() + ordered_units,
            UNITS,
            "pet {pet}"
        );
    }
    for (client, own) in restocked.iter().enumerate() {
        let acknowledged = told[client]
            .stocks
            .iter()
            .filter(|(at, _)| *at < backup_started)
            .map(|(_, stock)| *stock)
            .max()
            .unwrap_or(0);
        let (_, item) = call(&copy, ADMIN, "GET", &format!("/v1/inventory/{own}"), None);
        assert!(
            item["quantity"].as_i64().unwrap() >= acknowledged,
            "pet {own}: {item}, {acknowledged} acknowledged"
        );
    }
}

/// On a terminal a copy draws a bar per table (`script` gives it one); elsewhere it logs a
/// line per table (the other tests read those).
#[test]
fn a_copy_on_a_terminal_shows_a_bar_per_table() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("small.db");
    migrated(&source);
    let target = dir.path().join("copy.db");
    let command = format!(
        "{} copy --from {} --to {}",
        binary::BINARY,
        source.display(),
        target.display()
    );
    let Ok(output) = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env_remove("PETSTORE_LOG_FORMAT")
        .output()
    else {
        eprintln!("skipped: `script` (util-linux) is not installed");
        return;
    };
    assert_succeeded(&output);
    let shown = String::from_utf8_lossy(&output.stdout);
    for table in ["categories", "pets", "events", "webhook_deliveries"] {
        assert!(
            shown.contains(&format!("{table} [")) && shown.contains("0/0 rows"),
            "a bar for {table}: {shown}"
        );
    }
    assert!(
        !shown.contains(r#""table":"#),
        "no log lines for the tables: {shown}"
    );
}

/// `check` exits 1 with a line per violation, and 0 when all hold.
#[test]
fn check_exits_one_with_a_line_per_violation() {
    use diesel::connection::SimpleConnection;
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("broken.db");
    let config = migrated(&database);
    let database = database.to_str().unwrap();
    let sound = check(database);
    assert_succeeded(&sound);
    assert!(sound.stdout.is_empty());
    petstore_store::connect(&config)
        .unwrap()
        .batch_execute(
            "INSERT INTO categories (name, name_key) VALUES ('Dogs', 'dogs');
             INSERT INTO pets (name, name_key, category_id, status, stock, open_orders)
             VALUES ('Rex', 'rex', 1, 'available', 0, 2), ('Fido', 'fido', 1, 'available', 0, 1);",
        )
        .unwrap();
    let broken = check(database);
    assert_eq!(broken.status.code(), Some(1));
    let lines = String::from_utf8_lossy(&broken.stdout);
    assert_eq!(
        lines.lines().collect::<Vec<_>>(),
        [
            "pet 1: counts 2 open orders, which is not how many it has",
            "pet 2: counts 1 open orders, which is not how many it has"
        ]
    );
}

/// `check`, `copy --from` and `backup` read a file no node has open (it has no `-wal`) and
/// leave nothing beside it, and its bytes as they were, even where its folder is the
/// reader's to write in; a file a connection has open is read through its log, beside it.
#[test]
fn reading_a_shop_leaves_nothing_beside_its_file() {
    use diesel::connection::SimpleConnection;
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("shop.db");
    let config = migrated(&source);
    petstore_store::connect(&config)
        .unwrap()
        .batch_execute("INSERT INTO categories (name, name_key) VALUES ('Dogs', 'dogs');")
        .unwrap();
    let beside = |suffix: &str| dir.path().join(format!("shop.db{suffix}"));
    assert!(!beside("-wal").exists() && !beside("-shm").exists());
    let before = std::fs::read(&source).unwrap();
    let name = source.to_str().unwrap();

    assert_succeeded(&check(name));
    let copied = dir.path().join("copied.db");
    assert_succeeded(&copy(name, copied.to_str().unwrap()));
    let backup = dir.path().join("backup.db");
    assert_succeeded(&petstore(name).arg("backup").arg(&backup).output().unwrap());
    for suffix in ["-wal", "-shm"] {
        assert!(!beside(suffix).exists(), "a read left shop.db{suffix}");
    }
    assert_eq!(
        std::fs::read(&source).unwrap(),
        before,
        "a read changed the file"
    );
    assert_eq!(binary::category_names(&copied), ["Dogs"]);

    // Held open in WAL mode by another connection (as a serving node holds it): read through
    // its log, what it wrote included, and its files stay its own.
    let mut node = petstore_store::connect(&config).unwrap();
    node.batch_execute(
        "PRAGMA wal_autocheckpoint = 0; INSERT INTO categories (name, name_key) VALUES ('Cats', 'cats');",
    )
    .unwrap();
    assert!(beside("-wal").exists());
    let recopied = dir.path().join("recopied.db");
    assert_succeeded(&copy(name, recopied.to_str().unwrap()));
    assert_eq!(
        binary::category_names(&recopied),
        ["Dogs", "Cats"],
        "the log's write was not read"
    );
    assert!(beside("-wal").exists(), "the node's log was taken away");
    drop(node);
}

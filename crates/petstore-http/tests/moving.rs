//! Moving a shop's data with the binary: `petstore copy` from SQLite to PostgreSQL and back,
//! `petstore check`. The copy must answer every list the API serves exactly as the original
//! did, keep keys, idempotency records and event ids working, and refuse a target with rows.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod binary;

use std::process::Output;

use binary::{Server, petstore, send_to, serve_with};
use petstore_store::testing::{ScratchPostgres, postgres_configured};
use serde_json::Value;

const ADMIN: &str = "moving-admin-0123456789abcdef0123456789a";

fn call(server: &Server, key: &str, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    call_with(server, key, method, path, &[], body)
}

fn call_with(
    server: &Server,
    key: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> (u16, Value) {
    let (status, text) =
        send_to(&server.address, method, path, key, headers, body).expect("an answer");
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

fn fill(server: &Server) -> Shop {
    let dogs = made(server, ADMIN, "/v1/categories", r#"{"name": "Dogs"}"#)["id"].clone();
    made(
        server,
        ADMIN,
        "/v1/categories",
        r#"{"name": "Cats", "description": "Aloof"}"#,
    );
    let mut pets = Vec::new();
    for name in ["Rex", "Fido", "Gone"] {
        let pet = made(
            server,
            ADMIN,
            "/v1/pets",
            &format!(r#"{{"name": "{name}", "categoryId": {dogs}}}"#),
        )["id"]
            .as_i64()
            .unwrap();
        let (status, _) = call(
            server,
            ADMIN,
            "PATCH",
            &format!("/v1/inventory/{pet}"),
            Some(r#"{"quantity": 10}"#),
        );
        assert_eq!(status, 200);
        pets.push(pet);
    }
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
    let (status, idempotent_order) = call_with(
        server,
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

/// SQLite to PostgreSQL to SQLite: each copy answers every list as the original did, its keys
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
    let (code, _) = server.stop();
    assert_eq!(code, Some(0));
    let checked = check(original.to_str().unwrap());
    assert_succeeded(&checked);

    assert_succeeded(&copy(original.to_str().unwrap(), postgres.url()));
    assert_succeeded(&copy(postgres.url(), returned.to_str().unwrap()));
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
        let (status, replayed) = call_with(
            &server,
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

//! Keys, roles, ownership and rate limits through the real app.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use crate::common;

use std::num::NonZeroU32;
use std::time::Duration;

use actix_web::http::Method;
use actix_web::test::TestRequest;
use petstore_core::Role;
use petstore_http::app::HttpLimits;
use petstore_http::auth::RateLimits;
use serde_json::{Value, json};

use common::{start, start_with};

#[actix_web::test]
async fn requests_without_a_valid_key_are_401_with_a_challenge() {
    let api = start().await;
    let revoked = api.key(Role::Staff, 1).await;
    api.send(TestRequest::delete().uri("/v1/keys/2")).await;
    let unknown = format!("pst_{}", "0".repeat(64));
    let cases: [(&str, Option<String>); 6] = [
        ("no header", None),
        ("empty", Some(String::new())),
        ("not bearer", Some(format!("Basic {}", api.admin))),
        ("too short", Some("Bearer abc".into())),
        ("unknown", Some(format!("Bearer {unknown}"))),
        ("revoked", Some(format!("Bearer {revoked}"))),
    ];
    for (case, header) in cases {
        let mut request = TestRequest::get().uri("/v1/pets");
        if let Some(value) = header {
            request = request.insert_header(("authorization", value));
        }
        let reply = api.send_as(None, request).await;
        reply.assert_error(401, "unauthorized");
        assert_eq!(reply.header("www-authenticate"), Some("Bearer"), "{case}");
    }
    // 401 comes before anything else is looked at: here, an invalid body.
    let reply = api
        .send_as(
            None,
            TestRequest::post()
                .uri("/v1/pets")
                .set_json(json!({"bad": true})),
        )
        .await;
    reply.assert_error(401, "unauthorized");
}

/// Fills a documented path's ids with 1.
fn concrete(path: &str) -> String {
    let mut out = String::from("/v1");
    for segment in path.split('/').filter(|s| !s.is_empty()) {
        out.push('/');
        out.push_str(if segment.starts_with('{') {
            "1"
        } else {
            segment
        });
    }
    if out == "/v1" {
        out.push('/');
    }
    out
}

/// For every operation of the document: no key is 401, and a key whose role the operation's
/// requirement does not name is 403, and only then. The handlers' `Auth<…>` and the document's
/// `security` cannot disagree without this failing.
#[actix_web::test]
async fn every_operation_enforces_exactly_the_role_it_documents() {
    let api = start().await;
    let customer = api.key(Role::Customer, 1).await;
    let staff = api.key(Role::Staff, 2).await;
    let doc = serde_json::to_value(petstore_http::openapi::document()).unwrap();
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let roles: Vec<String> =
                serde_json::from_value(operation["security"][0]["bearerAuth"].clone()).unwrap();
            let request = || {
                let mut request = TestRequest::default()
                    .method(Method::from_bytes(method.to_uppercase().as_bytes()).unwrap())
                    .uri(&concrete(path));
                if operation.get("requestBody").is_some() {
                    request = request.set_json(json!({}));
                }
                request
            };
            let id = operation["operationId"].as_str().unwrap();
            api.send_as(None, request())
                .await
                .assert_error(401, "unauthorized");
            // An allowed caller of a stream gets an endless answer: tests/http/cli.rs reads that one.
            let streams = operation["responses"]["200"]["content"]
                .get("text/event-stream")
                .is_some();
            for (key, role) in [(&customer, "customer"), (&staff, "staff")] {
                let allowed = roles.is_empty() || roles.iter().any(|r| r == role);
                if allowed && streams {
                    continue;
                }
                let reply = api.send_as(Some(key), request()).await;
                if allowed {
                    assert!(
                        ![401, 403].contains(&reply.status.as_u16()),
                        "{id} as {role}: {reply:?}"
                    );
                } else {
                    reply.assert_error(403, "forbidden");
                }
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 41, "every operation was checked");
}

#[actix_web::test]
async fn customers_see_and_cancel_only_their_own_orders() {
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 10).await;
    let alice = api.key(Role::Customer, 1).await;
    let bob = api.key(Role::Customer, 2).await;
    let staff = api.key(Role::Staff, 3).await;
    let order = |key: String| {
        let api = &api;
        async move {
            api.send_as(
                Some(&key),
                TestRequest::post()
                    .uri("/v1/store/orders")
                    .set_json(json!({"petId": pet})),
            )
            .await
        }
    };
    let alices = order(alice.clone()).await;
    assert_eq!(alices.status, 201);
    let bobs = order(bob.clone()).await;
    let bobs_uri = format!("/v1/store/orders/{}", bobs.body["id"]);

    let as_alice = |request: TestRequest| api.send_as(Some(&alice), request);
    as_alice(TestRequest::get().uri(&bobs_uri))
        .await
        .assert_error(404, "not_found");
    as_alice(TestRequest::delete().uri(&bobs_uri))
        .await
        .assert_error(404, "not_found");
    let listed = as_alice(TestRequest::get().uri("/v1/store/orders")).await;
    assert_eq!(listed.body, json!([alices.body]));
    let own =
        as_alice(TestRequest::get().uri(&format!("/v1/store/orders/{}", alices.body["id"]))).await;
    assert_eq!(own.body, alices.body);

    let all = api
        .send_as(Some(&staff), TestRequest::get().uri("/v1/store/orders"))
        .await;
    assert_eq!(all.body.as_array().unwrap().len(), 2);
    // Bob's order is untouched by Alice's attempt, and Bob may cancel it.
    let cancelled = api
        .send_as(Some(&bob), TestRequest::delete().uri(&bobs_uri))
        .await;
    assert_eq!(cancelled.status, 204);
}

#[actix_web::test]
async fn keys_are_created_shown_once_listed_and_revoked() {
    let api = start().await;
    let created = api
        .post("/v1/keys", json!({"name": "Warehouse", "role": "staff"}))
        .await;
    assert_eq!(created.status, 201);
    let secret = created.body["key"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("pst_") && secret.len() == 68, "{secret}");
    assert_eq!(created.body["prefix"], &secret[..12]);
    let location = created.header("location").unwrap().to_owned();

    let as_new = |request: TestRequest| api.send_as(Some(&secret), request);
    assert_eq!(as_new(TestRequest::get().uri("/v1/pets")).await.status, 200);
    as_new(TestRequest::get().uri("/v1/keys"))
        .await
        .assert_error(403, "forbidden");

    let read = api.get(&location).await;
    assert_eq!(read.body["role"], "staff");
    assert!(
        read.body.get("key").is_none(),
        "the secret is shown only at creation"
    );
    let listed = api.get("/v1/keys").await;
    assert!(!listed.body.to_string().contains(&secret[12..]));
    assert_eq!(listed.body.as_array().unwrap().len(), 2);

    assert_eq!(api.delete(&location).await.status, 204);
    as_new(TestRequest::get().uri("/v1/pets"))
        .await
        .assert_error(401, "unauthorized");
    assert!(api.get(&location).await.body["revokedAt"].is_string());
    api.delete("/v1/keys/99")
        .await
        .assert_error(404, "not_found");
    api.delete("/v1/keys/1")
        .await
        .assert_error(409, "invalid_transition");
    assert_eq!(
        api.get("/v1/pets").await.status,
        200,
        "the admin key still works"
    );
    api.post("/v1/keys", json!({"name": "X", "role": "root"}))
        .await
        .assert_error(400, "validation_failed");
    api.post(
        "/v1/keys",
        json!({"name": "X", "role": "staff", "key": "mine"}),
    )
    .await
    .assert_error(400, "validation_failed");
}

#[actix_web::test]
async fn the_rate_limit_trips_at_its_rate_and_recovers() {
    let two = NonZeroU32::new(2).unwrap();
    let api = start_with(HttpLimits {
        rate: RateLimits::new(two, two),
        ..HttpLimits::default()
    })
    .await;
    let first = api.get("/v1/pets").await;
    assert_eq!(
        first.header("ratelimit-policy"),
        Some("\"per-node\";q=2;w=1")
    );
    assert_eq!(first.header("ratelimit"), Some("\"per-node\";r=1;t=1"));
    assert_eq!(first.header("cache-control"), Some("no-store"));
    assert_eq!(
        api.get("/v1/pets").await.header("ratelimit"),
        Some("\"per-node\";r=0;t=1")
    );
    let limited = api.get("/v1/pets").await;
    limited.assert_error(429, "rate_limited");
    assert_eq!(limited.header("retry-after"), Some("1"));
    // Another key has its own allowance.
    let other = api.key(Role::Customer, 1).await;
    assert_eq!(
        api.send_as(Some(&other), TestRequest::get().uri("/v1/pets"))
            .await
            .status,
        200
    );

    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(
        api.get("/v1/pets").await.status,
        200,
        "recovered after the window"
    );
}

#[actix_web::test]
async fn requests_without_a_valid_key_share_their_address_allowance() {
    let two = NonZeroU32::new(2).unwrap();
    let api = start_with(HttpLimits {
        rate: RateLimits::new(two, two),
        ..HttpLimits::default()
    })
    .await;
    let guess = |n: u8| format!("Bearer pst_{}", format!("{n:02x}").repeat(32));
    for n in 0..2 {
        let reply = api
            .send_as(
                None,
                TestRequest::get()
                    .uri("/v1/pets")
                    .insert_header(("authorization", guess(n))),
            )
            .await;
        reply.assert_error(401, "unauthorized");
    }
    // A third guess from the same address is refused before it is even checked.
    let reply = api
        .send_as(
            None,
            TestRequest::get()
                .uri("/v1/pets")
                .insert_header(("authorization", guess(3))),
        )
        .await;
    reply.assert_error(429, "rate_limited");
    // A valid key is not held back by the guesses.
    assert_eq!(api.get("/v1/pets").await.status, 200);
}

#[actix_web::test]
async fn a_key_never_appears_in_logs_or_later_responses() {
    let logs = common::captured_logs();

    let api = start().await;
    let created = api
        .post("/v1/keys", json!({"name": "Till", "role": "customer"}))
        .await;
    let secret = created.body["key"].as_str().unwrap().to_owned();
    let mut later: Vec<Value> = Vec::new();
    for request in [
        TestRequest::get().uri("/v1/keys"),
        TestRequest::get().uri("/v1/keys/2"),
        TestRequest::get().uri("/v1/store/orders"),
        TestRequest::get().uri("/v1/nowhere"),
    ] {
        let reply = api.send_as(Some(&secret), request).await;
        later.push(reply.body.clone());
        later.push(json!(format!("{:?}", reply.headers)));
    }
    later.push(api.get("/v1/keys").await.body);
    let text = serde_json::to_string(&later).unwrap();
    assert!(
        !text.contains(&secret[12..]),
        "a later response showed the secret"
    );

    let logged = logs.text();
    assert!(
        logged.contains("request handled"),
        "the logs were captured: {logged}"
    );
    assert!(!logged.contains(&secret[12..]), "the secret was logged");
    assert!(
        !logged.contains(&api.admin[12..]),
        "the admin secret was logged"
    );
}

//! Safe retries and concurrent edits through the real app: `ETag`, `If-Match`, `If-None-Match`
//! and `Idempotency-Key`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use crate::common;

use std::sync::Arc;

use actix_web::test::{self, TestRequest};
use futures_util::future::join_all;
use petstore_core::{ManualClock, Role};
use petstore_http::app::app;
use petstore_http::state::AppState;
use petstore_store::AnyStore;
use petstore_store::testing::TestDatabase;
use serde_json::json;

use common::{create_key, generous_limits, send, start};

#[actix_web::test]
async fn reads_carry_an_etag_and_if_none_match_answers_304() {
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 1).await;
    for uri in [
        format!("/v1/pets/{pet}"),
        "/v1/categories/1".into(),
        format!("/v1/inventory/{pet}"),
        "/v1/keys/1".into(),
    ] {
        let read = api.get(&uri).await;
        assert_eq!(read.status, 200, "{uri}");
        let tag = read.header("etag").unwrap().to_owned();
        let cached = api
            .send(
                TestRequest::get()
                    .uri(&uri)
                    .insert_header(("if-none-match", tag.clone())),
            )
            .await;
        assert_eq!(cached.status, 304, "{uri}");
        assert_eq!(cached.body, serde_json::Value::Null);
        assert_eq!(cached.header("etag"), Some(tag.as_str()));
        let weak = api
            .send(
                TestRequest::get()
                    .uri(&uri)
                    .insert_header(("if-none-match", format!("W/{tag}"))),
            )
            .await;
        assert_eq!(weak.status, 304, "If-None-Match compares weakly");
        let stale = api
            .send(
                TestRequest::get()
                    .uri(&uri)
                    .insert_header(("if-none-match", "\"old\"")),
            )
            .await;
        assert_eq!(stale.status, 200);
    }
}

#[actix_web::test]
async fn changes_honour_if_match_and_answer_the_new_etag() {
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 1).await;
    let uri = format!("/v1/pets/{pet}");
    let tag = api.get(&uri).await.header("etag").unwrap().to_owned();
    let body = json!({"name": "Rex II", "categoryId": 1});
    let put = |condition: String, body: serde_json::Value| {
        TestRequest::put()
            .uri(&uri)
            .insert_header(("if-match", condition))
            .set_json(body)
    };

    let replaced = api.send(put(tag.clone(), body.clone())).await;
    assert_eq!(replaced.status, 200);
    let new_tag = replaced.header("etag").unwrap().to_owned();
    assert_ne!(new_tag, tag);
    assert_eq!(api.get(&uri).await.header("etag"), Some(new_tag.as_str()));

    let stale = api
        .send(put(
            tag.clone(),
            json!({"name": "Rex III", "categoryId": 1}),
        ))
        .await;
    stale.assert_error(412, "precondition_failed");
    assert_eq!(
        api.get(&uri).await.body["name"],
        "Rex II",
        "the stale write changed nothing"
    );
    api.send(put(format!("W/{new_tag}"), body.clone()))
        .await
        .assert_error(412, "precondition_failed");
    assert_eq!(api.send(put("*".into(), body.clone())).await.status, 200);
    api.send(put("not-a-tag".into(), body))
        .await
        .assert_error(412, "precondition_failed");
    let garbled = TestRequest::get()
        .uri(&uri)
        .insert_header(("if-none-match", "not-a-tag"));
    assert_eq!(
        api.send(garbled).await.status,
        200,
        "a malformed If-None-Match is ignored"
    );

    let stock = format!("/v1/inventory/{pet}");
    let patch = TestRequest::patch()
        .uri(&stock)
        .insert_header(("if-match", "\"x\""))
        .set_json(json!({"quantity": 0}));
    api.send(patch)
        .await
        .assert_error(412, "precondition_failed");
    let delete = TestRequest::delete()
        .uri(&uri)
        .insert_header(("if-match", "\"x\""));
    api.send(delete)
        .await
        .assert_error(412, "precondition_failed");
    let current = api.get(&uri).await.header("etag").unwrap().to_owned();
    let delete = TestRequest::delete()
        .uri(&uri)
        .insert_header(("if-match", current));
    assert_eq!(api.send(delete).await.status, 204);
}

#[actix_web::test]
async fn two_concurrent_puts_from_the_same_state_give_one_200_and_one_412() {
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 1).await;
    let uri = format!("/v1/pets/{pet}");
    for round in 0..10 {
        let tag = api.get(&uri).await.header("etag").unwrap().to_owned();
        let requests = ["Left", "Right"].map(|name| {
            let request = TestRequest::put()
                .uri(&uri)
                .insert_header(("if-match", tag.clone()))
                .set_json(json!({"name": format!("{name} {round}"), "categoryId": 1}));
            api.send(request)
        });
        let mut statuses: Vec<u16> = join_all(requests)
            .await
            .iter()
            .map(|r| r.status.as_u16())
            .collect();
        statuses.sort_unstable();
        assert_eq!(statuses, [200, 412], "round {round}");
    }
}

#[actix_web::test]
async fn a_retried_post_replays_its_first_answer() {
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 5).await;
    let order = |key: &str, quantity: u32| {
        TestRequest::post()
            .uri("/v1/store/orders")
            .insert_header(("idempotency-key", key.to_owned()))
            .set_json(json!({"petId": pet, "quantity": quantity}))
    };
    let first = api.send(order("retry-1", 2)).await;
    assert_eq!(first.status, 201);
    let again = api.send(order("retry-1", 2)).await;
    assert_eq!(again.status, 201);
    assert_eq!(again.body, first.body);
    for header in ["location", "etag"] {
        assert_eq!(again.header(header), first.header(header), "{header}");
    }
    assert_eq!(
        api.get(&format!("/v1/inventory/{pet}")).await.body["quantity"],
        3,
        "taken once"
    );

    api.send(order("retry-1", 1))
        .await
        .assert_error(422, "idempotency_key_reused");
    // Another caller's identical key is its own.
    let other = api.key(Role::Customer, 9).await;
    let theirs = api.send_as(Some(&other), order("retry-1", 2)).await;
    assert_eq!(theirs.status, 201);
    assert_ne!(theirs.body["id"], first.body["id"]);

    api.send(order(&"k".repeat(256), 1))
        .await
        .assert_error(400, "invalid_parameter");
    let create_key = TestRequest::post()
        .uri("/v1/keys")
        .insert_header(("idempotency-key", "k1"))
        .set_json(json!({"name": "X", "role": "staff"}));
    api.send(create_key)
        .await
        .assert_error(400, "invalid_parameter");
}

#[actix_web::test]
async fn fifty_concurrent_posts_with_one_key_place_one_order() {
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 100).await;
    let requests = (0..50).map(|_| {
        api.send(
            TestRequest::post()
                .uri("/v1/store/orders")
                .insert_header(("idempotency-key", "one-order"))
                .set_json(json!({"petId": pet})),
        )
    });
    let replies = join_all(requests).await;
    assert!(
        replies.iter().all(|r| r.status == 201),
        "{:?}",
        replies.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    assert!(
        replies
            .windows(2)
            .all(|w| w[0].body == w[1].body && w[0].header("location") == w[1].header("location"))
    );
    assert_eq!(api.order_count().await, 1);
    assert_eq!(
        api.get(&format!("/v1/inventory/{pet}")).await.body["quantity"],
        99
    );
}

#[actix_web::test]
async fn a_retry_after_a_restart_still_replays() {
    let database = TestDatabase::new("restart");
    let config = database.config();
    let boot = || {
        let store = AnyStore::open(&config).unwrap();
        AppState::new(store, Arc::new(ManualClock::new(common::now()))).unwrap()
    };
    let state = boot();
    let admin = create_key(&state, Role::Admin, 1).await;
    let request = || {
        TestRequest::post()
            .uri("/v1/categories")
            .insert_header(("authorization", format!("Bearer {admin}")))
            .insert_header(("idempotency-key", "before-the-crash"))
            .set_json(json!({"name": "Dogs"}))
    };
    let first = {
        let service = test::init_service(app(state, generous_limits())).await;
        send(&service, request()).await
    };
    assert_eq!(first.status, 201);

    let service = test::init_service(app(boot(), generous_limits())).await;
    let again = send(&service, request()).await;
    assert_eq!(
        again.status, 201,
        "not category_exists: the first answer is replayed"
    );
    assert_eq!(again.body, first.body);
    let list = TestRequest::get()
        .uri("/v1/categories")
        .insert_header(("authorization", format!("Bearer {admin}")));
    assert_eq!(send(&service, list).await.body.as_array().unwrap().len(), 1);
}

//! Holds through the real app: units set aside at once, shown in the inventory; a hold read
//! with how it ended; released or checked out once; past its expiry refused without a trace,
//! then ended by the sweeper's use case with its event.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use actix_web::test::TestRequest;
use petstore_core::Role;
use serde_json::json;

use crate::common::start;

#[actix_web::test]
async fn a_hold_sets_units_aside_and_is_checked_out_once() {
    let api = start().await;
    let rex = api.pet_with_stock("Rex", 5).await;
    let fido = api.pet_with_stock("Fido", 1).await;
    api.set_price(rex, 250).await;
    api.set_price(fido, 1000).await;
    let shopper = api.key(Role::Customer, 41).await;
    let basket =
        json!({"lines": [{"petId": rex, "quantity": 2}, {"petId": fido}], "ttlSeconds": 60});
    let hold = |key: &'static str| {
        TestRequest::post()
            .uri("/v1/store/holds")
            .insert_header(("idempotency-key", key))
            .set_json(&basket)
    };
    let placed = api.send_as(Some(&shopper), hold("basket-1")).await;
    assert_eq!(placed.status, 201, "{placed:?}");
    let id = placed.body["id"].as_i64().unwrap();
    assert_eq!(
        placed.header("location"),
        Some(format!("/v1/store/holds/{id}").as_str())
    );
    assert_eq!(
        placed.body["lines"],
        json!([
            {"lineNo": 1, "petId": rex, "quantity": 2},
            {"lineNo": 2, "petId": fido, "quantity": 1}
        ])
    );
    assert!(placed.body.get("ended").is_none(), "{placed:?}");
    let again = api.send_as(Some(&shopper), hold("basket-1")).await;
    assert_eq!(
        (again.status.as_u16(), &again.body),
        (201, &placed.body),
        "replayed"
    );
    assert_eq!(
        api.get(&format!("/v1/inventory/{rex}")).await.body,
        json!({"petId": rex, "quantity": 3, "status": "available", "held": 2, "committed": 0})
    );
    assert_eq!(
        api.get(&format!("/v1/pets/{fido}")).await.body["status"],
        "pending"
    );
    let other = api.key(Role::Customer, 42).await;
    let theirs = api
        .send_as(
            Some(&other),
            TestRequest::get().uri(&format!("/v1/store/holds/{id}")),
        )
        .await;
    theirs.assert_error(404, "not_found");

    let checkout = |key: &'static str| {
        TestRequest::post()
            .uri(&format!("/v1/store/holds/{id}/checkout"))
            .insert_header(("idempotency-key", key))
            .set_json(json!({"expectedTotal": 1500}))
    };
    let order = api.send_as(Some(&shopper), checkout("pay-1")).await;
    assert_eq!(order.status, 201, "{order:?}");
    let order_id = order.body["id"].as_i64().unwrap();
    assert_eq!(
        order.header("location"),
        Some(format!("/v1/store/orders/{order_id}").as_str())
    );
    assert_eq!(order.body["totalAmount"], 1500);
    assert_eq!(
        api.get(&format!("/v1/inventory/{rex}")).await.body,
        json!({"petId": rex, "quantity": 3, "status": "available", "held": 0, "committed": 2})
    );
    let ended = api.get(&format!("/v1/store/holds/{id}")).await;
    assert_eq!(ended.body["ended"]["how"], "consumed", "{ended:?}");
    assert_eq!(ended.body["ended"]["orderId"], order_id);
    api.send_as(Some(&shopper), checkout("pay-2"))
        .await
        .assert_error(409, "hold_ended");
    api.delete(&format!("/v1/store/holds/{id}"))
        .await
        .assert_error(409, "hold_ended");
}

#[actix_web::test]
async fn a_hold_past_its_expiry_is_refused_then_swept() {
    let api = start().await;
    let rex = api.pet_with_stock("Rex", 2).await;
    api.set_price(rex, 100).await;
    let placed = api
        .post(
            "/v1/store/holds",
            json!({"lines": [{"petId": rex, "quantity": 2}], "ttlSeconds": 30}),
        )
        .await;
    assert_eq!(placed.status, 201, "{placed:?}");
    let id = placed.body["id"].as_i64().unwrap();
    api.post(
        "/v1/store/holds",
        json!({"lines": [{"petId": rex}], "ttlSeconds": 1801}),
    )
    .await
    .assert_error(422, "hold_too_long");

    api.clock.advance(chrono::Duration::seconds(60));
    let events = api.get("/v1/events").await.body.as_array().unwrap().len();
    api.post(&format!("/v1/store/holds/{id}/checkout"), json!({}))
        .await
        .assert_error(409, "hold_expired");
    api.delete(&format!("/v1/store/holds/{id}"))
        .await
        .assert_error(409, "hold_expired");
    assert_eq!(
        api.get("/v1/events").await.body.as_array().unwrap().len(),
        events
    );

    // A scrape reads the holds from the database: one active, two units, 30 s overdue.
    let scraped = api.get("/metrics").await.body;
    let metrics = scraped.as_str().unwrap();
    for line in [
        "petstore_holds_active 1",
        "petstore_holds_held_units 2",
        "petstore_holds_oldest_overdue_seconds 30.0",
        "petstore_hold_expiry_lateness_seconds_count 0",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in {metrics}");
    }
    let sweeper = api.state.acting_as(petstore_core::Actor::chore("holds"));
    let ended = sweeper
        .write(|shop| shop.holds().expire_due(100))
        .await
        .unwrap();
    assert_eq!(ended, 1);
    let scraped = api.get("/metrics").await.body;
    let metrics = scraped.as_str().unwrap();
    for line in [
        "petstore_holds_active 0",
        "petstore_holds_oldest_overdue_seconds 0.0",
        "petstore_hold_expiry_lateness_seconds_count 1",
        "petstore_hold_expiry_lateness_seconds_sum 30.0",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in {metrics}");
    }
    let swept = api.get(&format!("/v1/store/holds/{id}")).await;
    assert_eq!(swept.body["ended"]["how"], "expired", "{swept:?}");
    assert_eq!(
        api.get(&format!("/v1/inventory/{rex}")).await.body,
        json!({"petId": rex, "quantity": 2, "status": "available", "held": 0, "committed": 0})
    );
    let events = api.get("/v1/events").await.body;
    let expired = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "hold.expired")
        .unwrap();
    assert_eq!(expired["actorkind"], "service", "{expired}");
    assert_eq!(expired["actorname"], "holds", "{expired}");
}

//! The stock ledger through the real app: every change of a pet's stock is a movement staff can
//! read page by page, and an adjustment moves stock by a number of units with a reason,
//! guarded by the level it was meant for.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use crate::common::{TestApp, start};

use actix_http::Request;
use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::http::Method;
use actix_web::test::TestRequest;
use petstore_core::Role;
use serde_json::{Value, json};

/// Each movement's kind and balances after it, read page by page (two a page).
async fn story<S, B>(api: &TestApp<S>, pet: i64) -> Vec<(String, i64, i64)>
where
    S: Service<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody + 'static,
{
    let mut uri = format!("/v1/inventory/{pet}/movements?limit=2");
    let mut all = Vec::new();
    loop {
        let page = api.get(&uri).await;
        assert_eq!(page.status, 200, "{page:?}");
        for m in page.body.as_array().unwrap() {
            all.push((
                m["kind"].as_str().unwrap().to_owned(),
                m["availableAfter"].as_i64().unwrap(),
                m["committedAfter"].as_i64().unwrap(),
            ));
        }
        match page.next_link() {
            Some(next) => uri = next,
            None => return all,
        }
    }
}

#[actix_web::test]
async fn every_change_of_stock_is_a_movement_staff_can_read() {
    let api = start().await;
    let rex = api.pet_with_stock("Rex", 5).await;
    let order = api
        .post("/v1/store/orders", json!({"petId": rex, "quantity": 2}))
        .await;
    assert_eq!(order.status, 201, "{order:?}");
    let order = order.body["id"].as_i64().unwrap();
    let complete = api
        .json(
            Method::PATCH,
            &format!("/v1/store/orders/{order}"),
            json!({"complete": true}),
        )
        .await;
    assert_eq!(complete.status, 200, "{complete:?}");
    let second = api
        .post("/v1/store/orders", json!({"petId": rex, "quantity": 1}))
        .await
        .body["id"]
        .as_i64()
        .unwrap();
    let cancelled = api
        .send(TestRequest::delete().uri(&format!("/v1/store/orders/{second}")))
        .await;
    assert_eq!(cancelled.status, 204, "{cancelled:?}");
    assert_eq!(
        story(&api, rex).await,
        [
            ("set".to_owned(), 5, 0),
            ("committed".to_owned(), 3, 2),
            ("sold".to_owned(), 3, 0),
            ("committed".to_owned(), 2, 1),
            ("released".to_owned(), 3, 0),
        ]
    );
    let first = &api
        .get(&format!("/v1/inventory/{rex}/movements"))
        .await
        .body[1];
    assert_eq!(first["orderId"], order);
    assert_eq!(first["lineNo"], 1);
    assert_eq!(first["quantity"], 2);
    assert_eq!(first["availableChange"], -2);
    assert_eq!(first["committedChange"], 2);

    // A pet that never was has no movements; customers may not read any.
    let none = api.get("/v1/inventory/999/movements").await;
    assert_eq!((none.status.as_u16(), none.body.clone()), (200, json!([])));
    let customer = api.key(Role::Customer, 7).await;
    api.send_as(
        Some(&customer),
        TestRequest::get().uri(&format!("/v1/inventory/{rex}/movements")),
    )
    .await
    .assert_error(403, "forbidden");
}

#[actix_web::test]
async fn an_adjustment_moves_stock_for_a_reason_and_only_from_the_level_it_expects() {
    let api = start().await;
    let rex = api.pet_with_stock("Rex", 3).await;
    let uri = format!("/v1/inventory/{rex}/adjustments");
    let adjust = |body: Value| api.post(&uri, body);

    let taken =
        adjust(json!({"change": -3, "reason": "three found lame", "changeFromQuantity": 3})).await;
    assert_eq!(taken.status, 200, "{taken:?}");
    assert_eq!(
        taken.body,
        json!({"petId": rex, "quantity": 0, "status": "sold", "held": 0, "committed": 0})
    );
    assert!(taken.header("etag").is_some());
    // The same request again, its answer lost: the level it expected is gone.
    adjust(json!({"change": -3, "reason": "three found lame", "changeFromQuantity": 3}))
        .await
        .assert_error(412, "precondition_failed");
    adjust(json!({"change": -1, "reason": "one more"}))
        .await
        .assert_error(409, "insufficient_stock");
    for bad in [
        json!({"change": 0, "reason": "nothing"}),
        json!({"change": 1}),
        json!({"change": 1, "reason": "  "}),
        json!({"change": 1_000_001, "reason": "a lot"}),
        json!({"change": 1, "reason": "x", "extra": true}),
    ] {
        adjust(bad.clone())
            .await
            .assert_error(400, "validation_failed");
    }
    let delivered = adjust(json!({"change": 4, "reason": "delivery 4411"})).await;
    assert_eq!(
        delivered.body,
        json!({"petId": rex, "quantity": 4, "status": "available", "held": 0, "committed": 0})
    );
    // If-Match holds an adjustment to the entry a client saw, as it holds a stock set.
    let stale = api
        .send(
            TestRequest::post()
                .uri(&uri)
                .insert_header(("if-match", taken.header("etag").unwrap().to_owned()))
                .set_json(json!({"change": 1, "reason": "late"})),
        )
        .await;
    stale.assert_error(412, "precondition_failed");

    let moved = api
        .get(&format!("/v1/inventory/{rex}/movements"))
        .await
        .body;
    let reasons: Vec<&str> = moved
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["reason"].as_str())
        .collect();
    assert_eq!(reasons, ["three found lame", "delivery 4411"]);
    assert_eq!(
        story(&api, rex).await.last().unwrap(),
        &("adjusted".to_owned(), 4, 0)
    );
}

//! Checkouts through the real app: one order of several lines, all or nothing, at the prices
//! the pets have; a refusal names every refused line; `expectedTotal` guards against a price
//! changed since the basket was shown; an `Idempotency-Key` places it once.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use crate::common::start;

use actix_web::http::Method;
use actix_web::test::TestRequest;
use serde_json::json;

#[actix_web::test]
async fn a_checkout_places_one_order_of_every_line_at_its_price() {
    let api = start().await;
    let rex = api.pet_with_stock("Rex", 5).await;
    let fido = api.pet_with_stock("Fido", 2).await;
    api.set_price(rex, 1999).await;
    api.set_price(fido, 500).await;
    let basket = json!({
        "lines": [{"petId": fido, "quantity": 2}, {"petId": rex, "quantity": 3}],
        "expectedTotal": 6997
    });
    let placed = api
        .send(
            TestRequest::post()
                .uri("/v1/store/checkout")
                .insert_header(("idempotency-key", "basket-1"))
                .set_json(&basket),
        )
        .await;
    assert_eq!(placed.status, 201, "{placed:?}");
    let id = placed.body["id"].as_i64().unwrap();
    assert_eq!(
        placed.header("location"),
        Some(format!("/v1/store/orders/{id}").as_str())
    );
    assert_eq!(
        placed.body,
        json!({
            "id": id, "petId": fido, "quantity": 2, "complete": false,
            "lines": [
                {"lineNo": 1, "petId": fido, "quantity": 2, "unitAmount": 500, "amount": 1000},
                {"lineNo": 2, "petId": rex, "quantity": 3, "unitAmount": 1999, "amount": 5997}
            ],
            "currency": "EUR", "totalAmount": 6997
        })
    );
    let read = api.get(&format!("/v1/store/orders/{id}")).await;
    assert_eq!(read.body, placed.body);
    let listed = api.get(&format!("/v1/store/orders?petId={rex}")).await;
    assert_eq!(
        listed.body,
        json!([placed.body.clone()]),
        "found by its line 2"
    );

    // The same request again under its key: the same order, nothing more taken.
    let again = api
        .send(
            TestRequest::post()
                .uri("/v1/store/checkout")
                .insert_header(("idempotency-key", "basket-1"))
                .set_json(&basket),
        )
        .await;
    assert_eq!(again.status, 201, "{again:?}");
    assert_eq!(again.body, placed.body);
    let stock = |pet: i64| {
        let api = &api;
        async move { api.get(&format!("/v1/inventory/{pet}")).await.body["quantity"].clone() }
    };
    assert_eq!((stock(rex).await, stock(fido).await), (json!(2), json!(0)));

    // Completing it sells every line.
    let done = api
        .json(
            Method::PATCH,
            &format!("/v1/store/orders/{id}"),
            json!({"complete": true}),
        )
        .await;
    assert_eq!(done.status, 200, "{done:?}");
    assert_eq!(
        api.get(&format!("/v1/pets/{fido}")).await.body["status"],
        "sold"
    );
}

#[actix_web::test]
async fn a_refused_checkout_names_every_refused_line_and_places_nothing() {
    let api = start().await;
    let rex = api.pet_with_stock("Rex", 1).await;
    let fido = api.pet_with_stock("Fido", 5).await;
    let kitty = api.pet_with_stock("Kitty", 0).await;
    for (pet, amount) in [(rex, 100), (fido, 200), (kitty, 300)] {
        api.set_price(pet, amount).await;
    }
    let short = api
        .post(
            "/v1/store/checkout",
            json!({"lines": [
                {"petId": rex, "quantity": 2},
                {"petId": fido, "quantity": 1},
                {"petId": kitty}
            ]}),
        )
        .await;
    short.assert_error(409, "insufficient_stock");
    let fields: Vec<(&str, &str)> = short.body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["field"].as_str().unwrap(), e["code"].as_str().unwrap()))
        .collect();
    assert_eq!(
        fields,
        [
            ("/lines/0/quantity", "insufficient_stock"),
            ("/lines/2/quantity", "insufficient_stock")
        ]
    );
    let stale = api
        .post(
            "/v1/store/checkout",
            json!({"lines": [{"petId": fido, "quantity": 2}], "expectedTotal": 300}),
        )
        .await;
    stale.assert_error(409, "total_mismatch");
    assert!(
        stale.body["message"].as_str().unwrap().contains("400"),
        "{stale:?}"
    );
    let unpriced = api.pet_with_stock("Plain", 3).await;
    api.post(
        "/v1/store/checkout",
        json!({"lines": [{"petId": unpriced}]}),
    )
    .await
    .assert_error(409, "price_missing");
    api.post(
        "/v1/store/checkout",
        json!({"lines": [{"petId": 999}, {"petId": fido}]}),
    )
    .await
    .assert_error(422, "unknown_pet");
    for bad in [
        json!({"lines": []}),
        json!({"lines": [{"petId": fido, "quantity": 0}]}),
        json!({"lines": [{"petId": fido}], "expectedTotal": -1}),
        json!({"lines": [{"petId": fido}], "coupon": "FREE"}),
    ] {
        api.post("/v1/store/checkout", bad.clone())
            .await
            .assert_error(400, "validation_failed");
    }
    // Two lines for one pet: a rule the schema cannot say, refused as the body's meaning.
    api.post(
        "/v1/store/checkout",
        json!({"lines": [{"petId": fido}, {"petId": rex}, {"petId": fido}]}),
    )
    .await
    .assert_error(422, "pet_repeated");
    let orders = api.get("/v1/store/orders").await;
    assert_eq!(orders.body, json!([]), "nothing was placed");
    assert_eq!(
        api.get(&format!("/v1/inventory/{fido}")).await.body["quantity"],
        5
    );
}

#[actix_web::test]
async fn the_console_shows_an_orders_lines_and_total() {
    use crate::console::{page, sign_in};
    let api = start().await;
    let rex = api.pet_with_stock("Rex", 5).await;
    let fido = api.pet_with_stock("Fido", 2).await;
    api.set_price(rex, 1999).await;
    api.set_price(fido, 500).await;
    let placed = api
        .post(
            "/v1/store/checkout",
            json!({"lines": [{"petId": fido, "quantity": 2}, {"petId": rex, "quantity": 3}]}),
        )
        .await;
    assert_eq!(placed.status, 201, "{placed:?}");
    let staff = api.key(petstore_core::Role::Staff, 3).await;
    let (cookie, _) = sign_in(&api, &staff, false).await;
    let shown = page(&api, &cookie, "/console/orders").await;
    let html = shown.body.as_str().unwrap();
    let id = placed.body["id"].as_i64().unwrap();
    let row = &html[html
        .find(&format!("id=\"order-{id}\""))
        .expect("the order's row")..];
    assert!(
        row.starts_with(&format!(
            "id=\"order-{id}\"><td data-label=\"Order\"><a href=\"/console/orders/{id}\">{id}</a></td><td data-label=\"Pet\">Fido × 2, Rex × 3</td><td data-label=\"Units\">5</td><td data-label=\"Total\">69.97 EUR</td>"
        )),
        "{row}"
    );
}

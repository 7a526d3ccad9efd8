//! Prices through the real app: `GET /v1` names the shop's currency, a pet's price is its own
//! resource with `ETag`/`If-Match`, it shows on the pet, and replacing the pet keeps it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use crate::binary::{petstore, serve_with};
use crate::common;

use actix_web::http::Method;
use actix_web::test::TestRequest;
use petstore_core::Role;
use petstore_store::testing::TestDatabase;
use serde_json::json;

use common::start;

#[actix_web::test]
async fn the_api_names_the_currency_amounts_are_in() {
    let api = start().await;
    let info = api.get("/v1").await;
    assert_eq!(info.status, 200, "{info:?}");
    assert_eq!(info.body["currency"], "EUR");
    assert_eq!(info.body["currencyExponent"], 2);
}

#[actix_web::test]
async fn a_price_is_set_read_and_removed_as_the_pets_own_resource() {
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 1).await;
    let uri = format!("/v1/pets/{pet}/price");
    api.get(&uri).await.assert_error(404, "not_found");
    assert!(
        api.get(&format!("/v1/pets/{pet}"))
            .await
            .body
            .get("price")
            .is_none()
    );

    let set = api.json(Method::PUT, &uri, json!({"amount": 1999})).await;
    assert_eq!(set.status, 200, "{set:?}");
    assert_eq!(
        set.body,
        json!({"petId": pet, "amount": 1999, "currency": "EUR"})
    );
    let tag = set.header("etag").unwrap().to_owned();
    let read = api.get(&uri).await;
    assert_eq!(read.body, set.body);
    assert_eq!(read.header("etag"), Some(tag.as_str()));
    let cached = api
        .send(
            TestRequest::get()
                .uri(&uri)
                .insert_header(("if-none-match", tag.clone())),
        )
        .await;
    assert_eq!(cached.status, 304);

    let shown = api.get(&format!("/v1/pets/{pet}")).await;
    assert_eq!(
        shown.body["price"],
        json!({"amount": 1999, "currency": "EUR"})
    );
    let listed = api.get(&format!("/v1/pets?id={pet}")).await;
    assert_eq!(listed.body[0]["price"], shown.body["price"]);

    // If-Match: a stale tag is refused and changes nothing; the current one goes ahead.
    let put = |condition: &str, amount: i64| {
        TestRequest::put()
            .uri(&uri)
            .insert_header(("if-match", condition.to_owned()))
            .set_json(json!({"amount": amount}))
    };
    let changed = api.send(put(&tag, 2500)).await;
    assert_eq!(changed.status, 200, "{changed:?}");
    api.send(put(&tag, 3000))
        .await
        .assert_error(412, "precondition_failed");
    assert_eq!(api.get(&uri).await.body["amount"], 2500);
    let current = changed.header("etag").unwrap().to_owned();
    let stale_delete = TestRequest::delete()
        .uri(&uri)
        .insert_header(("if-match", tag.clone()));
    api.send(stale_delete)
        .await
        .assert_error(412, "precondition_failed");
    let removed = api
        .send(
            TestRequest::delete()
                .uri(&uri)
                .insert_header(("if-match", current)),
        )
        .await;
    assert_eq!(removed.status, 204, "{removed:?}");
    api.get(&uri).await.assert_error(404, "not_found");
    api.delete(&uri).await.assert_error(404, "not_found");
    assert!(
        api.get(&format!("/v1/pets/{pet}"))
            .await
            .body
            .get("price")
            .is_none()
    );

    // `*` asks for a price that exists: none does now.
    api.send(put("*", 100))
        .await
        .assert_error(412, "precondition_failed");
    api.json(Method::PUT, "/v1/pets/999/price", json!({"amount": 1}))
        .await
        .assert_error(404, "not_found");
}

#[actix_web::test]
async fn only_staff_set_prices_and_amounts_are_whole_minor_units() {
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 1).await;
    let uri = format!("/v1/pets/{pet}/price");
    let customer = api.key(Role::Customer, 1).await;
    let as_customer = TestRequest::put().uri(&uri).set_json(json!({"amount": 5}));
    api.send_as(Some(&customer), as_customer)
        .await
        .assert_error(403, "forbidden");
    for (refused, code) in [
        (json!({"amount": 19.99}), "validation_failed"),
        (json!({"amount": -1}), "validation_failed"),
        (json!({"amount": 100_000_000_000_i64}), "validation_failed"),
        (json!({"amount": 5, "currency": "USD"}), "validation_failed"),
        (json!({}), "validation_failed"),
        (json!({"amount": "1999"}), "invalid_json"),
    ] {
        api.json(Method::PUT, &uri, refused.clone())
            .await
            .assert_error(400, code);
    }
    api.get(&uri).await.assert_error(404, "not_found");
    let largest = api
        .json(Method::PUT, &uri, json!({"amount": 99_999_999_999_i64}))
        .await;
    assert_eq!(largest.body["amount"], 99_999_999_999_i64, "{largest:?}");
    let customers_read = api
        .send_as(Some(&customer), TestRequest::get().uri(&uri))
        .await;
    assert_eq!(customers_read.status, 200, "anyone reads a price");
}

#[actix_web::test]
async fn replacing_a_pet_keeps_its_price_and_each_change_is_a_pet_updated_event() {
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 1).await;
    let uri = format!("/v1/pets/{pet}/price");
    api.set_price(pet, 700).await;
    let category = api.get(&format!("/v1/pets/{pet}")).await.body["categoryId"].clone();
    let replaced = api
        .json(
            Method::PUT,
            &format!("/v1/pets/{pet}"),
            json!({"name": "Rex II", "categoryId": category}),
        )
        .await;
    assert_eq!(replaced.status, 200, "{replaced:?}");
    assert_eq!(
        replaced.body["price"],
        json!({"amount": 700, "currency": "EUR"})
    );
    assert_eq!(api.get(&uri).await.body["amount"], 700);

    api.set_price(pet, 700).await;
    assert_eq!(api.delete(&uri).await.status, 204);
    let events = api.get("/v1/events?limit=100").await;
    let updates: Vec<&serde_json::Value> = events
        .body
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["type"] == "pet.updated")
        .map(|event| &event["data"])
        .collect();
    assert_eq!(
        updates.len(),
        3,
        "set, replaced, removed; the same amount again is no change"
    );
    assert_eq!(
        updates[0]["price"],
        json!({"amount": 700, "currency": "EUR"})
    );
    assert_eq!(updates[1]["name"], "Rex II");
    assert!(updates[2].get("price").is_none());
}

/// The first start chooses the currency; a start naming another, by flag or environment, is
/// refused with both named and nothing changed, and a malformed code is a usage error.
#[test]
fn a_start_with_another_currency_is_refused_and_changes_nothing() {
    let database = TestDatabase::new("currency");
    let key = "currency-admin-0123456789abcdef0123456789";
    let yen = serve_with(database.arg(), Some(key), &["--currency", "JPY"]);
    let info = yen.get("/v1", key);
    assert!(
        info.contains(r#""currency":"JPY","currencyExponent":0"#),
        "{info}"
    );
    assert_eq!(yen.terminate().0, Some(0));

    for (flags, env) in [(&["--currency", "EUR"][..], None), (&[][..], Some("USD"))] {
        let mut command = petstore(database.arg());
        command.args(["serve", "--bind", "127.0.0.1:0"]).args(flags);
        if let Some(code) = env {
            command.env("PETSTORE_CURRENCY", code);
        }
        let refused = command.output().unwrap();
        assert_eq!(refused.status.code(), Some(1), "{refused:?}");
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(
            said.contains("prices in JPY") && said.contains("--currency"),
            "{said}"
        );
    }
    let malformed = petstore(database.arg())
        .args(["serve", "--currency", "euro"])
        .output()
        .unwrap();
    assert_eq!(malformed.status.code(), Some(2), "{malformed:?}");

    let again = serve_with(database.arg(), Some(key), &["--currency", "JPY"]);
    let info = again.get("/v1", key);
    assert!(info.contains(r#""currency":"JPY""#), "{info}");
    assert_eq!(again.terminate().0, Some(0));
}

#[actix_web::test]
async fn an_order_shows_the_price_its_pet_had_when_placed() {
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 5).await;
    api.set_price(pet, 1250).await;
    let placed = api
        .post("/v1/store/orders", json!({"petId": pet, "quantity": 3}))
        .await;
    assert_eq!(placed.status, 201, "{placed:?}");
    assert_eq!(
        placed.body,
        json!({"id": 1, "petId": pet, "quantity": 3, "complete": false,
               "lines": [{"lineNo": 1, "petId": pet, "quantity": 3, "unitAmount": 1250, "amount": 3750}],
               "currency": "EUR", "totalAmount": 3750})
    );
    api.set_price(pet, 99).await;
    assert_eq!(api.get("/v1/store/orders/1").await.body, placed.body);
    let events = api.get("/v1/events?limit=100").await;
    let placed_event = events
        .body
        .as_array()
        .unwrap()
        .iter()
        .find(|event| event["type"] == "order.placed")
        .unwrap();
    assert_eq!(placed_event["data"]["totalAmount"], 3750);
}

#[actix_web::test]
async fn the_console_shows_a_pets_price_and_each_orders_total() {
    use crate::console::{page, sign_in};
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 5).await;
    api.set_price(pet, 1250).await;
    let placed = api
        .post("/v1/store/orders", json!({"petId": pet, "quantity": 3}))
        .await;
    assert_eq!(placed.status, 201, "{placed:?}");
    let staff = api.key(Role::Staff, 1).await;
    let (cookie, _) = sign_in(&api, &staff, false).await;
    let pet_page = page(&api, &cookie, &format!("/console/pets/{pet}")).await;
    let text = pet_page.body.as_str().unwrap_or_default();
    assert!(text.contains("Price: 12.50 EUR"), "{text}");
    let orders = page(&api, &cookie, "/console/orders").await;
    let text = orders.body.as_str().unwrap_or_default();
    assert!(
        text.contains("<td data-label=\"Total\">37.50 EUR</td>"),
        "{text}"
    );
}

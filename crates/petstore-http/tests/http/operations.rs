//! Every operation of `/v1` through the real app on a real SQLite file: its success and each
//! error it documents.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use crate::common;

use actix_web::http::Method;
use actix_web::test::TestRequest;
use serde_json::json;

use common::start;

#[actix_web::test]
async fn api_info_reports_both_versions() {
    let api = start().await;
    for uri in ["/v1", "/v1/"] {
        let reply = api.get(uri).await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.body["apiVersion"], "1.0.0");
        assert_eq!(reply.body["version"], env!("CARGO_PKG_VERSION"));
    }
}

// ---- categories ----------------------------------------------------------------------

#[actix_web::test]
async fn categories_are_created_read_replaced_and_deleted() {
    let api = start().await;
    let created = api
        .post(
            "/v1/categories",
            json!({"name": " Dogs ", "description": "Loyal.\nLoud."}),
        )
        .await;
    assert_eq!(created.status, 201);
    assert_eq!(
        created.body,
        json!({"id": 1, "name": "Dogs", "description": "Loyal.\nLoud."})
    );
    assert_eq!(created.header("location"), Some("/v1/categories/1"));

    assert_eq!(api.get("/v1/categories/1").await.body, created.body);
    let replaced = api
        .json(Method::PUT, "/v1/categories/1", json!({"name": "Hounds"}))
        .await;
    assert_eq!(replaced.status, 200);
    assert_eq!(replaced.body, json!({"id": 1, "name": "Hounds"}));

    let deleted = api.delete("/v1/categories/1").await;
    assert_eq!(deleted.status, 204);
    assert_eq!(deleted.body, serde_json::Value::Null);
    api.get("/v1/categories/1")
        .await
        .assert_error(404, "not_found");
}

#[actix_web::test]
async fn category_names_are_unique_regardless_of_case() {
    let api = start().await;
    api.post("/v1/categories", json!({"name": "Dogs"})).await;
    api.post("/v1/categories", json!({"name": "DOGS"}))
        .await
        .assert_error(409, "category_exists");
    api.post("/v1/categories", json!({"name": "Cats"})).await;
    api.json(Method::PUT, "/v1/categories/2", json!({"name": "dogs"}))
        .await
        .assert_error(409, "category_exists");
}

#[actix_web::test]
async fn a_category_in_use_cannot_be_deleted() {
    let api = start().await;
    api.pet_with_stock("Rex", 0).await;
    api.delete("/v1/categories/1")
        .await
        .assert_error(409, "category_in_use");
    api.delete("/v1/categories/99")
        .await
        .assert_error(404, "not_found");
    api.json(Method::PUT, "/v1/categories/99", json!({"name": "X"}))
        .await
        .assert_error(404, "not_found");
}

#[actix_web::test]
async fn categories_list_in_pages_linked_by_cursor() {
    let api = start().await;
    for i in 0..5 {
        api.post("/v1/categories", json!({"name": format!("Kind {i}")}))
            .await;
    }
    let first = api.get("/v1/categories?limit=2").await;
    assert_eq!(first.status, 200);
    assert_eq!(first.body.as_array().unwrap().len(), 2);
    let link = first.header("link").unwrap().to_owned();
    let next = first.next_link().unwrap();
    assert!(
        next.starts_with("/v1/categories?limit=2&cursor=k"),
        "{link}"
    );
    assert!(link.ends_with("rel=\"next\""));
    let second = api.get(&next).await;
    assert_eq!(second.body[0]["name"], "Kind 2");
    let last = api.get("/v1/categories?limit=2&cursor=k4").await;
    assert_eq!(last.body.as_array().unwrap().len(), 1);
    assert_eq!(last.header("link"), None, "no next page");
    api.get("/v1/categories?cursor=bogus")
        .await
        .assert_error(400, "invalid_parameter");
    api.get("/v1/categories?limit=101")
        .await
        .assert_error(400, "invalid_parameter");
}

// ---- pets ----------------------------------------------------------------------------

#[actix_web::test]
async fn pets_are_created_read_replaced_and_deleted() {
    let api = start().await;
    api.post("/v1/categories", json!({"name": "Dogs"})).await;
    let created = api
        .post("/v1/pets", json!({"name": "Rex", "categoryId": 1}))
        .await;
    assert_eq!(created.status, 201);
    assert_eq!(
        created.body,
        json!({"id": 1, "name": "Rex", "categoryId": 1, "status": "available"})
    );
    assert_eq!(created.header("location"), Some("/v1/pets/1"));

    let read = api.get("/v1/pets/1").await;
    assert_eq!(read.status, 200);
    assert_eq!(read.body, created.body);
    // JSON Schema counts 1.0 an integer, in paths and queries too.
    assert_eq!(api.get("/v1/pets/1.0").await.body, created.body);
    assert_eq!(
        api.get("/v1/pets?limit=1.0&id=1.00").await.body,
        json!([created.body])
    );
    api.get("/v1/pets/1.5")
        .await
        .assert_error(400, "invalid_parameter");

    let replaced = api
        .json(
            Method::PUT,
            "/v1/pets/1",
            json!({"name": "Rex II", "categoryId": 1, "status": "sold"}),
        )
        .await;
    assert_eq!(replaced.status, 200);
    assert_eq!(replaced.body["status"], "sold");
    assert_eq!(api.get("/v1/inventory/1").await.body["status"], "sold");

    assert_eq!(api.delete("/v1/pets/1").await.status, 204);
    api.get("/v1/pets/1").await.assert_error(404, "not_found");
    api.get("/v1/inventory/1")
        .await
        .assert_error(404, "not_found");
}

#[actix_web::test]
async fn a_pet_needs_an_existing_category() {
    let api = start().await;
    api.post("/v1/pets", json!({"name": "Rex", "categoryId": 7}))
        .await
        .assert_error(422, "unknown_category");
    let id = api.pet_with_stock("Rex", 0).await;
    api.json(
        Method::PUT,
        &format!("/v1/pets/{id}"),
        json!({"name": "Rex", "categoryId": 7}),
    )
    .await
    .assert_error(422, "unknown_category");
    api.json(
        Method::PUT,
        "/v1/pets/99",
        json!({"name": "Rex", "categoryId": 1}),
    )
    .await
    .assert_error(404, "not_found");
}

#[actix_web::test]
async fn pet_bodies_are_validated_field_by_field() {
    let api = start().await;
    api.post("/v1/categories", json!({"name": "Dogs"})).await;
    let cases = [
        (
            json!({"name": "", "categoryId": 1}),
            "validation_failed",
            "name",
        ),
        (
            json!({"name": "x".repeat(101), "categoryId": 1}),
            "validation_failed",
            "name",
        ),
        (
            json!({"name": "Re\u{0}x", "categoryId": 1}),
            "validation_failed",
            "name",
        ),
        (
            json!({"name": "Rex", "categoryId": 0}),
            "validation_failed",
            "categoryId",
        ),
        (
            json!({"name": "Rex", "categoryId": 9_007_199_254_740_992_i64}),
            "validation_failed",
            "categoryId",
        ),
        (
            json!({"name": "Rex", "categoryId": 1, "status": "lost"}),
            "validation_failed",
            "status",
        ),
        (
            json!({"name": "Rex", "categoryId": 1, "id": 5}),
            "validation_failed",
            "id",
        ),
        (json!({"name": "Rex"}), "validation_failed", "categoryId"),
        (
            json!({"name": "Rex", "categoryId": "1"}),
            "invalid_json",
            "categoryId",
        ),
        (json!({"name": 5, "categoryId": 1}), "invalid_json", "name"),
        (json!([1, 2]), "invalid_json", ""),
    ];
    for (body, code, field) in cases {
        let reply = api.post("/v1/pets", body.clone()).await;
        reply.assert_error(400, code);
        let message = reply.body["message"].as_str().unwrap();
        assert!(message.contains(field), "{body} -> {message}");
    }
    // JSON Schema calls 1.0 an integer, so the service does too.
    let integral = api
        .post("/v1/pets", json!({"name": "Rex", "categoryId": 1.0}))
        .await;
    assert_eq!(integral.status, 201);
    api.post("/v1/pets", json!({"name": "Rex", "categoryId": 1.5}))
        .await
        .assert_error(400, "validation_failed");
}

#[actix_web::test]
async fn every_bad_field_of_a_body_is_reported_at_once() {
    let api = start().await;
    api.post("/v1/categories", json!({"name": "Dogs"})).await;
    let reply = api
        .post(
            "/v1/pets",
            json!({"name": "", "categoryId": -1, "status": "zzz", "colour": "red"}),
        )
        .await;
    reply.assert_error(400, "validation_failed");
    let errors = reply.body["errors"].as_array().unwrap();
    let mut listed: Vec<(&str, &str)> = errors
        .iter()
        .map(|e| (e["field"].as_str().unwrap(), e["code"].as_str().unwrap()))
        .collect();
    listed.sort_unstable();
    assert_eq!(
        listed,
        [
            ("/categoryId", "invalid_value"),
            ("/colour", "unknown"),
            ("/name", "invalid_value"),
            ("/status", "invalid_value"),
        ]
    );
    let message = reply.body["message"].as_str().unwrap();
    let first = errors[0]["field"].as_str().unwrap().trim_start_matches('/');
    assert!(
        message.contains(first),
        "the message is the first: {message}"
    );
    assert!(
        errors
            .iter()
            .all(|e| !e["message"].as_str().unwrap().is_empty())
    );

    // A wrong JSON type keeps its code, and the fields after it are still read.
    let reply = api
        .post("/v1/store/orders", json!({"petId": "one", "quantity": 0}))
        .await;
    reply.assert_error(400, "invalid_json");
    let fields: Vec<&str> = reply.body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["/petId", "/quantity"]);

    // A body that is not JSON at all has no field to name.
    let reply = api
        .send(
            TestRequest::post()
                .uri("/v1/pets")
                .insert_header(("content-type", "application/json"))
                .set_payload("{\"name\": "),
        )
        .await;
    reply.assert_error(400, "invalid_json");
    assert!(reply.body.get("errors").is_none(), "{}", reply.body);
    // Nothing was created by any of them.
    let pets = api.get("/v1/pets").await;
    assert_eq!(pets.body.as_array().unwrap().len(), 0);
}

#[actix_web::test]
async fn pets_list_with_filters_and_pages() {
    let api = start().await;
    api.post("/v1/categories", json!({"name": "Dogs"})).await;
    api.post("/v1/categories", json!({"name": "Cats"})).await;
    for (name, category) in [
        ("Rex", 1),
        ("Felix", 2),
        ("Rexette", 1),
        ("Tom", 2),
        ("REXY", 2),
    ] {
        api.post("/v1/pets", json!({"name": name, "categoryId": category}))
            .await;
    }
    let names = |reply: &common::Reply| -> Vec<String> {
        reply
            .body
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        names(&api.get("/v1/pets").await),
        ["Rex", "Felix", "Rexette", "Tom", "REXY"]
    );
    assert_eq!(
        names(&api.get("/v1/pets?categoryId=2").await),
        ["Felix", "Tom", "REXY"]
    );
    assert_eq!(
        names(&api.get("/v1/pets?name=rex").await),
        ["Rex", "Rexette", "REXY"]
    );
    assert_eq!(
        names(&api.get("/v1/pets?id=4&id=2&id=77").await),
        ["Felix", "Tom"]
    );
    assert_eq!(
        names(&api.get("/v1/pets?status=sold").await),
        Vec::<String>::new()
    );

    let page = api.get("/v1/pets?name=rex&limit=2").await;
    assert_eq!(names(&page), ["Rex", "Rexette"]);
    let link = page.header("link").unwrap();
    assert!(
        link.contains("name=rex") && link.contains("limit=2"),
        "filters carry over: {link}"
    );
    let next = page.next_link().unwrap();
    assert_eq!(names(&api.get(&next).await), ["REXY"]);

    for bad in [
        "limit=0",
        "limit=abc",
        "status=lost",
        "categoryId=-1",
        "id=x",
        "cursor=k",
        "colour=red",
        "limit=5&limit=6",
        // A NUL, which PostgreSQL cannot hold, and another control character: no name has one.
        "name=%00",
        "name=a%01b",
    ] {
        api.get(&format!("/v1/pets?{bad}"))
            .await
            .assert_error(400, "invalid_parameter");
    }
}

#[actix_web::test]
async fn a_pet_with_open_orders_cannot_be_deleted() {
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 2).await;
    api.post("/v1/store/orders", json!({"petId": pet})).await;
    api.delete(&format!("/v1/pets/{pet}"))
        .await
        .assert_error(409, "pet_has_open_orders");
    api.delete("/v1/pets/99")
        .await
        .assert_error(404, "not_found");
}

// ---- orders --------------------------------------------------------------------------

#[actix_web::test]
async fn orders_are_placed_read_completed_and_listed() {
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 3).await;
    let placed = api
        .post(
            "/v1/store/orders",
            json!({"petId": pet, "quantity": 2, "shipDate": "2026-12-01T09:30:00+01:00"}),
        )
        .await;
    assert_eq!(placed.status, 201);
    assert_eq!(
        placed.body,
        json!({"id": 1, "petId": pet, "quantity": 2, "shipDate": "2026-12-01T08:30:00Z", "complete": false,
               "lines": [{"lineNo": 1, "petId": pet, "quantity": 2}]})
    );
    assert_eq!(placed.header("location"), Some("/v1/store/orders/1"));
    assert_eq!(api.get("/v1/inventory/1").await.body["quantity"], 1);
    assert_eq!(api.get("/v1/store/orders/1").await.body, placed.body);

    let completed = api
        .json(
            Method::PATCH,
            "/v1/store/orders/1",
            json!({"complete": true}),
        )
        .await;
    assert_eq!(completed.status, 200);
    assert_eq!(completed.body["complete"], true);
    let cleared = api
        .json(
            Method::PATCH,
            "/v1/store/orders/1",
            json!({"shipDate": null}),
        )
        .await;
    assert_eq!(
        cleared.body,
        json!({"id": 1, "petId": pet, "quantity": 2, "complete": true,
               "lines": [{"lineNo": 1, "petId": pet, "quantity": 2}]})
    );

    api.post("/v1/store/orders", json!({"petId": pet})).await;
    let open = api.get("/v1/store/orders?complete=false").await;
    assert_eq!(open.body.as_array().unwrap().len(), 1);
    assert_eq!(open.body[0]["id"], 2);
    let by_pet = api
        .get(&format!("/v1/store/orders?petId={pet}&limit=1"))
        .await;
    assert_eq!(by_pet.body.as_array().unwrap().len(), 1);
    assert!(
        by_pet
            .header("link")
            .unwrap()
            .contains(&format!("petId={pet}"))
    );
    api.get("/v1/store/orders?complete=maybe")
        .await
        .assert_error(400, "invalid_parameter");
}

#[actix_web::test]
async fn orders_are_refused_by_the_rules() {
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 1).await;
    api.post("/v1/store/orders", json!({"petId": 99}))
        .await
        .assert_error(422, "unknown_pet");
    api.post("/v1/store/orders", json!({"petId": pet, "quantity": 2}))
        .await
        .assert_error(409, "insufficient_stock");
    api.post("/v1/store/orders", json!({"petId": pet, "quantity": 0}))
        .await
        .assert_error(400, "validation_failed");
    api.post("/v1/store/orders", json!({"petId": pet, "complete": true}))
        .await
        .assert_error(400, "validation_failed");
    api.json(
        Method::PUT,
        &format!("/v1/pets/{pet}"),
        json!({"name": "Rex", "categoryId": 1, "status": "pending"}),
    )
    .await;
    api.post("/v1/store/orders", json!({"petId": pet}))
        .await
        .assert_error(409, "pet_not_available");
}

#[actix_web::test]
async fn completion_is_final_and_cancelling_puts_units_back() {
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 2).await;
    api.post("/v1/store/orders", json!({"petId": pet})).await;
    api.post("/v1/store/orders", json!({"petId": pet})).await;
    assert_eq!(
        api.get(&format!("/v1/pets/{pet}")).await.body["status"],
        "pending"
    );

    assert_eq!(api.delete("/v1/store/orders/2").await.status, 204);
    assert_eq!(
        api.get("/v1/inventory/1").await.body,
        json!({"petId": pet, "quantity": 1, "status": "available", "held": 0, "committed": 1})
    );
    api.get("/v1/store/orders/2")
        .await
        .assert_error(404, "not_found");
    api.delete("/v1/store/orders/2")
        .await
        .assert_error(404, "not_found");

    api.json(
        Method::PATCH,
        "/v1/store/orders/1",
        json!({"complete": true}),
    )
    .await;
    api.json(
        Method::PATCH,
        "/v1/store/orders/1",
        json!({"complete": false}),
    )
    .await
    .assert_error(409, "invalid_transition");
    api.delete("/v1/store/orders/1")
        .await
        .assert_error(409, "order_not_cancellable");
    api.json(
        Method::PATCH,
        "/v1/store/orders/9",
        json!({"complete": true}),
    )
    .await
    .assert_error(404, "not_found");
    api.json(Method::PATCH, "/v1/store/orders/1", json!({"quantity": 5}))
        .await
        .assert_error(400, "validation_failed");
    api.get("/v1/store/orders/0")
        .await
        .assert_error(400, "invalid_parameter");
}

// ---- inventory -----------------------------------------------------------------------

#[actix_web::test]
async fn stock_is_read_set_and_drives_the_status() {
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 5).await;
    let item = api.get(&format!("/v1/inventory/{pet}")).await;
    assert_eq!(
        item.body,
        json!({"petId": pet, "quantity": 5, "status": "available", "held": 0, "committed": 0})
    );
    let emptied = api
        .json(
            Method::PATCH,
            &format!("/v1/inventory/{pet}"),
            json!({"quantity": 0}),
        )
        .await;
    assert_eq!(
        emptied.body,
        json!({"petId": pet, "quantity": 0, "status": "sold", "held": 0, "committed": 0})
    );
    let sold = api.get("/v1/inventory?status=sold").await;
    assert_eq!(sold.body.as_array().unwrap().len(), 1);
    assert_eq!(
        api.get("/v1/inventory?status=available").await.body,
        json!([])
    );

    for bad in [
        json!({"quantity": -1}),
        json!({"quantity": 1_000_001}),
        json!({}),
        json!({"quantity": 1, "status": "sold"}),
    ] {
        api.json(Method::PATCH, &format!("/v1/inventory/{pet}"), bad)
            .await
            .assert_error(400, "validation_failed");
    }
    api.json(Method::PATCH, "/v1/inventory/99", json!({"quantity": 1}))
        .await
        .assert_error(404, "not_found");
    api.get("/v1/inventory/99")
        .await
        .assert_error(404, "not_found");
    api.get("/v1/inventory?status=gone")
        .await
        .assert_error(400, "invalid_parameter");
}

//! The OpenAPI document: a snapshot of all of it (any change to the contract shows up in
//! review), and the facts the contract requires of it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use petstore_core::{Name, PetQuery};
use petstore_http::openapi::document;
use petstore_http::pagination::CURSOR_PATTERN;
use serde_json::{Value, json};

fn doc() -> Value {
    serde_json::to_value(document()).unwrap()
}

#[test]
fn the_document_matches_its_reviewed_snapshot() {
    insta::assert_json_snapshot!("openapi", doc());
}

#[test]
fn the_seed_operations_keep_their_paths_and_ids() {
    let doc = doc();
    let seed = [
        ("/pets", "get", "listPets", "200"),
        ("/pets", "post", "createPet", "201"),
        ("/pets/{petId}", "get", "getPet", "200"),
        ("/categories", "get", "listCategories", "200"),
        ("/categories", "post", "createCategory", "201"),
        ("/store/orders", "get", "listOrders", "200"),
        ("/store/orders/{orderId}", "delete", "cancelOrder", "204"),
        ("/inventory", "get", "listInventory", "200"),
        ("/inventory/{petId}", "patch", "updateInventory", "200"),
    ];
    for (path, method, id, success) in seed {
        let operation = &doc["paths"][path][method];
        assert_eq!(operation["operationId"], id, "{method} {path}");
        assert!(
            operation["responses"][success].is_object(),
            "{id} answers {success}"
        );
    }
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], "1.0.0");
    assert_eq!(doc["servers"][0]["url"], "/v1");
    assert_eq!(
        doc["components"]["securitySchemes"]["bearerAuth"]["scheme"],
        "bearer"
    );
    let error = &doc["components"]["schemas"]["Error"];
    assert_eq!(error["required"], json!(["code", "message", "status"]));
}

#[test]
fn deprecation_and_stability_are_marked() {
    let doc = doc();
    let get_pet = &doc["paths"]["/pets/{petId}"]["get"];
    assert_eq!(get_pet["deprecated"], true);
    assert_eq!(get_pet["x-deprecated-sunset"], "2030-12-05");
    assert!(get_pet["responses"]["200"]["headers"]["Sunset"].is_object());
    let cancel = &doc["paths"]["/store/orders/{orderId}"]["delete"];
    assert_eq!(
        (&cancel["x-stability"], &cancel["x-stability-level"]),
        (&json!("beta"), &json!("beta"))
    );
    let inventory = &doc["paths"]["/inventory/{petId}"]["patch"];
    assert_eq!(inventory["x-stability"], "experimental");
    assert_eq!(inventory["x-stability-level"], "alpha");
    assert!(
        doc["paths"]["/pets"]["get"].get("x-stability").is_none(),
        "stable: no marker"
    );
    for (path, method) in [
        ("/webhooks", "get"),
        ("/webhooks", "post"),
        ("/webhooks/{webhookId}", "get"),
        ("/webhooks/{webhookId}", "delete"),
        ("/webhooks/{webhookId}/deliveries", "get"),
    ] {
        assert_eq!(
            doc["paths"][path][method]["x-stability"], "beta",
            "{method} {path}"
        );
    }
}

#[test]
fn the_webhooks_section_describes_every_event_and_its_signature() {
    let doc = doc();
    let webhooks = doc["webhooks"].as_object().expect("a webhooks section");
    let types: Vec<&str> = doc["components"]["schemas"]["EventType"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(webhooks.len(), types.len(), "one entry per event type");
    for event_type in types {
        let post = &webhooks[event_type]["post"];
        let headers: Vec<&str> = post["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            headers,
            [
                "webhook-id",
                "webhook-timestamp",
                "webhook-signature",
                "traceparent"
            ],
            "{event_type}"
        );
        // Each event type has its own envelope: its `type` one value, its `data` one shape,
        // both closed to extra fields.
        let body = &post["requestBody"]["content"]["application/json"]["schema"]["$ref"];
        let envelope_ref = body.as_str().unwrap();
        let envelope =
            &doc["components"]["schemas"][envelope_ref.trim_start_matches("#/components/schemas/")];
        assert_eq!(envelope["properties"]["type"]["enum"], json!([event_type]));
        assert_eq!(envelope["additionalProperties"], false, "{event_type}");
        let data = envelope["properties"]["data"]["$ref"].as_str().unwrap();
        let name = data.trim_start_matches("#/components/schemas/");
        assert!(
            doc["components"]["schemas"][name].is_object(),
            "{event_type}: {name} is described"
        );
        assert_eq!(
            doc["components"]["schemas"][name]["additionalProperties"], false,
            "{event_type}: {name} is closed"
        );
        assert_eq!(post["x-stability"], "beta");
        // The feed's `CloudEvent` is the `oneOf` of the envelopes, told apart by `type`.
        let cloud_event = &doc["components"]["schemas"]["CloudEvent"];
        assert_eq!(cloud_event["discriminator"]["propertyName"], "type");
        assert_eq!(
            cloud_event["discriminator"]["mapping"][event_type],
            envelope_ref
        );
        assert!(
            cloud_event["oneOf"]
                .as_array()
                .unwrap()
                .iter()
                .any(|item| item["$ref"] == envelope_ref),
            "{event_type}"
        );
    }
    assert_eq!(
        doc["components"]["schemas"]["CloudEvent"]["oneOf"]
            .as_array()
            .map(Vec::len),
        Some(webhooks.len()),
        "one envelope per event type"
    );
    let url = &doc["components"]["schemas"]["WebhookUrl"];
    assert_eq!(url["pattern"], petstore_core::WEBHOOK_URL_PATTERN);
    assert_eq!(url["maxLength"], 2048);
}

#[test]
fn every_operation_documents_its_errors() {
    let doc = doc();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let responses = operation["responses"].as_object().unwrap();
            for status in ["500", "503"] {
                assert!(
                    responses.contains_key(status),
                    "{method} {path} lacks {status}"
                );
            }
            if operation.get("requestBody").is_some() {
                for status in ["400", "413", "415"] {
                    assert!(
                        responses.contains_key(status),
                        "{method} {path} lacks {status}"
                    );
                }
            }
            if path.contains('{') {
                assert!(responses.contains_key("404"), "{method} {path} lacks 404");
            }
            for (status, response) in responses {
                assert!(
                    response["headers"]["X-Request-Id"].is_object(),
                    "{method} {path} {status}"
                );
                if status.starts_with('4') || status.starts_with('5') {
                    let schema = &response["content"]["application/json"]["schema"]["$ref"];
                    assert_eq!(
                        schema, "#/components/schemas/Error",
                        "{method} {path} {status}"
                    );
                }
            }
        }
    }
}

#[test]
fn bounds_are_in_the_schemas() {
    let doc = doc();
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        (&schemas["Name"]["minLength"], &schemas["Name"]["maxLength"]),
        (&json!(1), &json!(100))
    );
    assert_eq!(schemas["Description"]["maxLength"], 1000);
    assert_eq!(
        (
            &schemas["Quantity"]["minimum"],
            &schemas["Quantity"]["maximum"]
        ),
        (&json!(1), &json!(1000))
    );
    assert_eq!(schemas["PetId"]["maximum"], 9_007_199_254_740_991_i64);
    assert_eq!(
        schemas["InventoryUpdate"]["properties"]["quantity"]["maximum"],
        1_000_000
    );
    assert_eq!(
        schemas["NewPet"]["additionalProperties"], false,
        "unknown fields are refused"
    );
    let list_pets = doc["paths"]["/pets"]["get"]["parameters"]
        .as_array()
        .unwrap();
    let param = |name: &str| {
        list_pets
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(param("limit")["schema"]["maximum"], 100);
    assert_eq!(param("cursor")["schema"]["pattern"], CURSOR_PATTERN);
    // utoipa takes literals in these attributes: they must say what the domain enforces.
    assert_eq!(param("id")["schema"]["maxItems"], PetQuery::MAX_IDS);
    assert_eq!(param("name")["schema"]["maxLength"], Name::MAX_CHARS);
}

/// Every operation of the document, with its path and method.
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut found = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            if operation.get("responses").is_some() {
                found.push((path.clone(), method.clone(), operation.clone()));
            }
        }
    }
    found
}

#[test]
fn every_answer_declares_the_headers_the_service_sends_and_every_list_its_bound() {
    let doc = doc();
    let mut lists = 0;
    for (path, method, operation) in operations(&doc) {
        for (status, response) in operation["responses"].as_object().unwrap() {
            for header in ["RateLimit", "RateLimit-Policy", "X-Request-Id"] {
                assert!(
                    response["headers"].get(header).is_some(),
                    "{method} {path} {status}: {header}"
                );
            }
            for content in response["content"].as_object().into_iter().flatten() {
                let schema = &content.1["schema"];
                if schema["type"] == "array" {
                    lists += 1;
                    assert_eq!(schema["maxItems"], 100, "{method} {path} {status}");
                }
            }
        }
    }
    assert!(lists >= 8, "every list endpoint: {lists}");
    let stream = &doc["paths"]["/events/stream"]["get"]["responses"]["400"];
    assert!(
        stream["description"]
            .as_str()
            .unwrap()
            .contains("Last-Event-ID"),
        "{stream}"
    );
}

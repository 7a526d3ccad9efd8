//! Who did what: every write of both doors (each `/v1` write operation the OpenAPI document
//! lists, each form the console routes) is sent with a trace of its own, and every event it
//! appended must name the key that sent it, the door it came through and that trace. A write
//! that reaches the store around the request's context (a handler of its own making, a new
//! door without one) records no actor and fails here; so does a write operation or a form
//! this walk does not know.

#![allow(
    clippy::unwrap_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use std::collections::BTreeSet;

use actix_web::test::TestRequest;
use petstore_core::{Actor, Caller, Door, Event, EventId, KeyId, Name, PageSize, Role};
use serde_json::json;

use crate::common::{Reply, start};
use crate::console::{form_token, page, sign_in};

/// A `traceparent` of its own for step `step`.
fn trace(step: usize) -> String {
    format!("00-{:032x}-{:016x}-01", step + 1, step + 1)
}

/// The version a console form carries of what `reply` (a `/v1` read) answered: its entity
/// tag's hex digits.
fn version(reply: &Reply) -> String {
    reply.header("etag").unwrap().trim_matches('"').to_owned()
}

/// The `/v1` write operations of the document, by operation id.
fn api_writes() -> BTreeSet<String> {
    let document = serde_json::to_value(petstore_http::openapi::document()).unwrap();
    let mut writes = BTreeSet::new();
    for operations in document["paths"].as_object().unwrap().values() {
        for (method, operation) in operations.as_object().unwrap() {
            if ["post", "put", "patch", "delete"].contains(&method.as_str()) {
                writes.insert(operation["operationId"].as_str().unwrap().to_owned());
            }
        }
    }
    writes
}

/// The console's forms: the paths `console/mod.rs` routes a `POST` to.
fn console_forms() -> BTreeSet<String> {
    include_str!("../../src/console/mod.rs")
        .split(".route(")
        .skip(1)
        .filter(|route| route.contains("web::post()"))
        .map(|route| route.split('"').nth(1).unwrap().to_owned())
        .collect()
}

#[actix_web::test]
async fn every_write_of_both_doors_names_its_caller_door_and_trace() {
    let api = start().await;
    let staff = api.key(Role::Staff, 1).await;
    let keys = api.get("/v1/keys").await.body;
    let id_of = |name: &str| {
        let key = keys
            .as_array()
            .unwrap()
            .iter()
            .find(|key| key["name"] == name)
            .unwrap();
        KeyId::new(key["id"].as_i64().unwrap()).unwrap()
    };
    let (staff_id, admin_id) = (id_of("staff 1"), id_of("admin 200"));
    let actor = |door: Door, admin: bool| Actor::Key {
        id: if admin { admin_id } else { staff_id },
        name: Name::parse(if admin { "admin 200" } else { "staff 1" }).unwrap(),
        role: if admin { Role::Admin } else { Role::Staff },
        door,
    };
    let state = api.state.clone();
    let all_events = async || -> Vec<Event> {
        state
            .read_primary(|shop| {
                shop.events()
                    .after(Caller::Operator, None::<EventId>, PageSize::MAX_PAGE)
            })
            .await
            .unwrap()
    };
    let mut walked_api = BTreeSet::new();
    let mut walked_forms = BTreeSet::new();
    let mut step = 0;
    // Sends `request` as step `step` with its own trace, and checks the events it appended:
    // at least one if `appends`, each naming `who` and the trace; none otherwise.
    macro_rules! walk {
        ($key:expr, $request:expr, $who:expr, $appends:expr, $status:expr) => {{
            step += 1;
            let before = all_events().await.len();
            let reply = api
                .send_as($key, $request.insert_header(("traceparent", trace(step))))
                .await;
            assert_eq!(reply.status, $status, "step {step}: {reply:?}");
            let events = all_events().await;
            let appended = &events[before..];
            assert_eq!(!appended.is_empty(), $appends, "step {step}: {appended:?}");
            for event in appended {
                assert_eq!(event.actor.as_ref(), Some(&$who), "step {step}: {event:?}");
                assert_eq!(
                    event.traceparent.as_ref().map(|t| t.as_str()),
                    Some(trace(step).as_str()),
                    "step {step}: {event:?}"
                );
            }
            reply
        }};
    }

    // The API's door, a staff key: every write operation of the shop.
    let by_api = actor(Door::Api, false);
    let api_post = |uri: &str, body: serde_json::Value| TestRequest::post().uri(uri).set_json(body);
    let made = walk!(
        Some(staff.as_str()),
        api_post("/v1/categories", json!({"name": "Dogs"})),
        by_api,
        true,
        201
    );
    walked_api.insert("createCategory");
    let dogs = made.body["id"].as_i64().unwrap();
    walk!(
        Some(staff.as_str()),
        TestRequest::put()
            .uri(&format!("/v1/categories/{dogs}"))
            .set_json(json!({"name": "Hounds"})),
        by_api,
        true,
        200
    );
    walked_api.insert("replaceCategory");
    let made = walk!(
        Some(staff.as_str()),
        api_post("/v1/pets", json!({"name": "Rex", "categoryId": dogs})),
        by_api,
        true,
        201
    );
    walked_api.insert("createPet");
    let rex = made.body["id"].as_i64().unwrap();
    walk!(
        Some(staff.as_str()),
        TestRequest::put()
            .uri(&format!("/v1/pets/{rex}"))
            .set_json(json!({"name": "Rex II", "categoryId": dogs, "status": "available"})),
        by_api,
        true,
        200
    );
    walked_api.insert("replacePet");
    walk!(
        Some(staff.as_str()),
        TestRequest::patch()
            .uri(&format!("/v1/inventory/{rex}"))
            .set_json(json!({"quantity": 9})),
        by_api,
        true,
        200
    );
    walked_api.insert("updateInventory");
    let adjusted = walk!(
        Some(staff.as_str()),
        api_post(
            &format!("/v1/inventory/{rex}/adjustments"),
            json!({"change": -2, "reason": "two went home with the vet", "changeFromQuantity": 9})
        ),
        by_api,
        true,
        200
    );
    walked_api.insert("adjustInventory");
    // Its movement in the pet's ledger names the same caller, and the request it came in.
    let moved = api.get(&format!("/v1/inventory/{rex}/movements")).await;
    let last = moved.body.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["kind"], "adjusted", "{moved:?}");
    assert_eq!(last["reason"], "two went home with the vet");
    assert_eq!(last["actor"], serde_json::to_value(&by_api).unwrap());
    assert_eq!(
        last["requestId"].as_str(),
        adjusted
            .headers
            .get("x-request-id")
            .and_then(|v| v.to_str().ok()),
        "{moved:?}"
    );
    walk!(
        Some(staff.as_str()),
        TestRequest::put()
            .uri(&format!("/v1/pets/{rex}/price"))
            .set_json(json!({"amount": 1250})),
        by_api,
        true,
        200
    );
    walked_api.insert("setPetPrice");
    walk!(
        Some(staff.as_str()),
        api_post("/v1/store/checkout", json!({"lines": [{"petId": rex}]})),
        by_api,
        true,
        201
    );
    walked_api.insert("checkout");
    let hold = |units: i64| {
        api_post(
            "/v1/store/holds",
            json!({"lines": [{"petId": rex, "quantity": units}]}),
        )
    };
    let held = walk!(Some(staff.as_str()), hold(1), by_api, true, 201);
    walked_api.insert("placeHold");
    let checkout_hold = format!("/v1/store/holds/{}/checkout", held.body["id"]);
    walk!(
        Some(staff.as_str()),
        api_post(&checkout_hold, json!({})),
        by_api,
        true,
        201
    );
    walked_api.insert("checkoutHold");
    let held = walk!(Some(staff.as_str()), hold(1), by_api, true, 201);
    let release = format!("/v1/store/holds/{}", held.body["id"]);
    walk!(
        Some(staff.as_str()),
        TestRequest::delete().uri(&release),
        by_api,
        true,
        204
    );
    walked_api.insert("releaseHold");
    walk!(
        Some(staff.as_str()),
        TestRequest::delete().uri(&format!("/v1/pets/{rex}/price")),
        by_api,
        true,
        204
    );
    walked_api.insert("deletePetPrice");
    let placed = walk!(
        Some(staff.as_str()),
        api_post("/v1/store/orders", json!({"petId": rex, "quantity": 1})),
        by_api,
        true,
        201
    );
    walked_api.insert("placeOrder");
    let order = placed.body["id"].as_i64().unwrap();
    walk!(
        Some(staff.as_str()),
        TestRequest::patch()
            .uri(&format!("/v1/store/orders/{order}"))
            .set_json(json!({"shipDate": "2026-12-24T10:00:00Z"})),
        by_api,
        true,
        200
    );
    walked_api.insert("updateOrder");
    walk!(
        Some(staff.as_str()),
        TestRequest::delete().uri(&format!("/v1/store/orders/{order}")),
        by_api,
        true,
        204
    );
    walked_api.insert("cancelOrder");
    let spare = api
        .post("/v1/pets", json!({"name": "Spare", "categoryId": dogs}))
        .await
        .body["id"]
        .as_i64()
        .unwrap();
    walk!(
        Some(staff.as_str()),
        TestRequest::delete().uri(&format!("/v1/pets/{spare}")),
        by_api,
        true,
        204
    );
    walked_api.insert("deletePet");
    let cats = api
        .post("/v1/categories", json!({"name": "Cats"}))
        .await
        .body["id"]
        .as_i64()
        .unwrap();
    walk!(
        Some(staff.as_str()),
        TestRequest::delete().uri(&format!("/v1/categories/{cats}")),
        by_api,
        true,
        204
    );
    walked_api.insert("deleteCategory");
    // The admin's writes change no shop state, and append no event.
    let admin_api = actor(Door::Api, true);
    let key = walk!(
        Some(api.admin.as_str()),
        api_post("/v1/keys", json!({"name": "till", "role": "customer"})),
        admin_api,
        false,
        201
    );
    walked_api.insert("createKey");
    walk!(
        Some(api.admin.as_str()),
        TestRequest::delete().uri(&format!("/v1/keys/{}", key.body["id"])),
        admin_api,
        false,
        204
    );
    walked_api.insert("revokeKey");
    let hook = walk!(
        Some(api.admin.as_str()),
        api_post(
            "/v1/webhooks",
            json!({"url": "https://receiver.example/hooks", "events": ["pet.created"]})
        ),
        admin_api,
        false,
        201
    );
    walked_api.insert("createWebhook");
    let hook = hook.body["id"].as_i64().unwrap();
    walk!(
        Some(api.admin.as_str()),
        api_post(
            &format!("/v1/webhooks/{hook}/resend"),
            json!({"fromEventId": 1})
        ),
        admin_api,
        false,
        200
    );
    walked_api.insert("resendWebhookEvents");
    walk!(
        Some(api.admin.as_str()),
        TestRequest::delete().uri(&format!("/v1/webhooks/{hook}")),
        admin_api,
        false,
        204
    );
    walked_api.insert("deleteWebhook");
    let walked: BTreeSet<String> = walked_api.iter().map(|id| (*id).to_owned()).collect();
    assert_eq!(
        walked,
        api_writes(),
        "a /v1 write operation this walk does not know"
    );

    // The console's door, a staff session and an admin's: every form.
    let by_console = actor(Door::Console, false);
    let (cookie, _) = sign_in(&api, &staff, false).await;
    walked_forms.insert("/sign-in");
    let token = form_token(&page(&api, &cookie, "/console/").await);
    let form = |uri: &str, fields: Vec<(&str, String)>| {
        let mut fields = fields;
        fields.push(("form_token", token.clone()));
        TestRequest::post()
            .uri(uri)
            .insert_header(("cookie", cookie.clone()))
            .set_form(fields)
    };
    let text = |value: &str| value.to_owned();
    walk!(
        None,
        form("/console/categories", vec![("name", text("Birds"))]),
        by_console,
        true,
        303
    );
    walked_forms.insert("/categories");
    let categories = api.get("/v1/categories").await.body;
    let birds = categories
        .as_array()
        .unwrap()
        .iter()
        .find(|category| category["name"] == "Birds")
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    let shown = api.get(&format!("/v1/categories/{birds}")).await;
    walk!(
        None,
        form(
            &format!("/console/categories/{birds}"),
            vec![("name", text("Parrots")), ("version", version(&shown))]
        ),
        by_console,
        true,
        303
    );
    walked_forms.insert("/categories/{categoryId}");
    walk!(
        None,
        form(
            "/console/pets",
            vec![
                ("name", text("Polly")),
                ("category", birds.to_string()),
                ("status", text("available"))
            ]
        ),
        by_console,
        true,
        303
    );
    walked_forms.insert("/pets");
    let polly = api.get("/v1/pets?name=Polly").await.body[0]["id"]
        .as_i64()
        .unwrap();
    let shown = api.get(&format!("/v1/pets/{polly}")).await;
    walk!(
        None,
        form(
            &format!("/console/pets/{polly}"),
            vec![
                ("name", text("Polly II")),
                ("category", birds.to_string()),
                ("status", text("available")),
                ("version", version(&shown))
            ]
        ),
        by_console,
        true,
        303
    );
    walked_forms.insert("/pets/{petId}");
    let shown = api.get(&format!("/v1/inventory/{polly}")).await;
    walk!(
        None,
        form(
            &format!("/console/stock/{polly}"),
            vec![("quantity", text("5")), ("version", version(&shown))]
        ),
        by_console,
        true,
        303
    );
    walked_forms.insert("/stock/{petId}");
    let shown = api.get(&format!("/v1/inventory/{polly}")).await;
    walk!(
        None,
        form(
            &format!("/console/pets/{polly}/stock"),
            vec![("quantity", text("6")), ("version", version(&shown))]
        ),
        by_console,
        true,
        303
    );
    walked_forms.insert("/pets/{petId}/stock");
    let shown = api.get(&format!("/v1/inventory/{polly}")).await;
    walk!(
        None,
        form(
            "/console/stock/delivery",
            vec![
                ("reason", text("Delivery from the aviary")),
                ("pet", polly.to_string()),
                ("version", version(&shown)),
                ("units", text("4"))
            ]
        ),
        by_console,
        true,
        303
    );
    walked_forms.insert("/stock/delivery");
    let priced = api
        .json(
            actix_web::http::Method::PUT,
            &format!("/v1/pets/{polly}/price"),
            json!({"amount": 1250}),
        )
        .await;
    assert_eq!(priced.status, 200, "{priced:?}");
    walk!(
        None,
        form(
            "/console/orders/new",
            vec![
                ("pet", polly.to_string()),
                ("units", text("1")),
                ("step", text("place")),
                ("expected_total", text("1250"))
            ]
        ),
        by_console,
        true,
        303
    );
    walked_forms.insert("/orders/new");
    walk!(
        None,
        form(
            &format!("/console/pets/{polly}/order"),
            vec![("quantity", text("1"))]
        ),
        by_console,
        true,
        303
    );
    walked_forms.insert("/pets/{petId}/order");
    walk!(
        None,
        form(
            &format!("/console/pets/{polly}/order"),
            vec![("quantity", text("1"))]
        ),
        by_console,
        true,
        303
    );
    let orders = api
        .get(&format!("/v1/store/orders?petId={polly}"))
        .await
        .body;
    let (first, second) = (
        orders[0]["id"].as_i64().unwrap(),
        orders[1]["id"].as_i64().unwrap(),
    );
    let shown = api.get(&format!("/v1/store/orders/{first}")).await;
    walk!(
        None,
        form(
            &format!("/console/orders/{first}/ship-date"),
            vec![
                ("ship_date", text("2026-12-24")),
                ("version", version(&shown))
            ]
        ),
        by_console,
        true,
        303
    );
    walked_forms.insert("/orders/{orderId}/ship-date");
    let shown = api.get(&format!("/v1/store/orders/{first}")).await;
    walk!(
        None,
        form(
            &format!("/console/orders/{first}/complete"),
            vec![("version", version(&shown))]
        ),
        by_console,
        true,
        303
    );
    walked_forms.insert("/orders/{orderId}/complete");
    let shown = api.get(&format!("/v1/store/orders/{second}")).await;
    walk!(
        None,
        form(
            &format!("/console/orders/{second}/cancel"),
            vec![("version", version(&shown))]
        ),
        by_console,
        true,
        303
    );
    walked_forms.insert("/orders/{orderId}/cancel");
    let spare = api
        .post("/v1/pets", json!({"name": "Spare II", "categoryId": birds}))
        .await
        .body["id"]
        .as_i64()
        .unwrap();
    let shown = api.get(&format!("/v1/pets/{spare}")).await;
    walk!(
        None,
        form(
            &format!("/console/pets/{spare}/delete"),
            vec![("version", version(&shown))]
        ),
        by_console,
        true,
        303
    );
    walked_forms.insert("/pets/{petId}/delete");
    let empty = api
        .post("/v1/categories", json!({"name": "Fish"}))
        .await
        .body["id"]
        .as_i64()
        .unwrap();
    let shown = api.get(&format!("/v1/categories/{empty}")).await;
    walk!(
        None,
        form(
            &format!("/console/categories/{empty}/delete"),
            vec![("version", version(&shown))]
        ),
        by_console,
        true,
        303
    );
    walked_forms.insert("/categories/{categoryId}/delete");
    walk!(
        None,
        form("/console/sign-out", vec![]),
        by_console,
        false,
        303
    );
    walked_forms.insert("/sign-out");

    let admin_console = actor(Door::Console, true);
    let (cookie, _) = sign_in(&api, &api.admin, false).await;
    let token = form_token(&page(&api, &cookie, "/console/keys").await);
    let form = |uri: &str, fields: Vec<(&str, String)>| {
        let mut fields = fields;
        fields.push(("form_token", token.clone()));
        TestRequest::post()
            .uri(uri)
            .insert_header(("cookie", cookie.clone()))
            .set_form(fields)
    };
    walk!(
        None,
        form(
            "/console/keys",
            vec![("name", text("clerk")), ("role", text("staff"))]
        ),
        admin_console,
        false,
        200
    );
    walked_forms.insert("/keys");
    let clerk = api
        .get("/v1/keys")
        .await
        .body
        .as_array()
        .unwrap()
        .iter()
        .find(|key| key["name"] == "clerk")
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    let shown = api.get(&format!("/v1/keys/{clerk}")).await;
    walk!(
        None,
        form(
            &format!("/console/keys/{clerk}/revoke"),
            vec![("version", version(&shown))]
        ),
        admin_console,
        false,
        303
    );
    walked_forms.insert("/keys/{keyId}/revoke");
    walk!(
        None,
        form(
            "/console/webhooks",
            vec![
                ("url", text("https://receiver.example/hooks")),
                ("events", text("pet.created"))
            ]
        ),
        admin_console,
        false,
        200
    );
    walked_forms.insert("/webhooks");
    let hook = api.get("/v1/webhooks").await.body[0]["id"]
        .as_i64()
        .unwrap();
    let shown = api.get(&format!("/v1/webhooks/{hook}")).await;
    walk!(
        None,
        form(
            &format!("/console/webhooks/{hook}/resend"),
            vec![("from_event_id", text("1")), ("version", version(&shown))]
        ),
        admin_console,
        false,
        303
    );
    walked_forms.insert("/webhooks/{webhookId}/resend");
    let shown = api.get(&format!("/v1/webhooks/{hook}")).await;
    walk!(
        None,
        form(
            &format!("/console/webhooks/{hook}/delete"),
            vec![("version", version(&shown))]
        ),
        admin_console,
        false,
        303
    );
    walked_forms.insert("/webhooks/{webhookId}/delete");
    let walked: BTreeSet<String> = walked_forms.iter().map(|path| (*path).to_owned()).collect();
    assert_eq!(
        walked,
        console_forms(),
        "a console form this walk does not know"
    );
}

/// Work outside a request records who the state it runs on acts as: the operator unless it
/// says otherwise (the command line, the first admin key), the service for a chore.
#[actix_web::test]
async fn a_write_outside_a_request_records_who_its_state_acts_as() {
    let api = start().await;
    let dispatcher = api.state.acting_as(Actor::chore("webhooks"));
    let states = [
        ("by the operator", api.state.clone(), Actor::Operator),
        ("by a chore", dispatcher, Actor::chore("webhooks")),
    ];
    for (name, state, who) in states {
        let new = petstore_core::NewCategory {
            name: Name::parse(name).unwrap(),
            description: None,
        };
        state
            .write(move |shop| {
                shop.categories()
                    .create(Caller::Operator, new.clone(), None)
            })
            .await
            .unwrap();
        let events = state
            .read_primary(|shop| {
                shop.events()
                    .after(Caller::Operator, None::<EventId>, PageSize::MAX_PAGE)
            })
            .await
            .unwrap();
        let last = events.last().unwrap();
        assert_eq!(last.actor.as_ref(), Some(&who), "{name}: {last:?}");
        assert_eq!(last.traceparent, None, "{name}: no request, no trace");
    }
}

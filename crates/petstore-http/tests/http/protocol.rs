//! The contract's conventions on every path out: JSON errors from routing, methods, media
//! types, sizes and panics; request ids; versioning and getPet's deprecation.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use crate::common;

use actix_web::http::Method;
use actix_web::test::{self, TestRequest};
use actix_web::{HttpResponse, web};
use chrono::Duration;
use petstore_http::app::{HttpLimits, app};
use serde_json::json;

use common::{send, start};

#[actix_web::test]
async fn unknown_routes_and_versions_are_json_404s() {
    let api = start().await;
    api.get("/nowhere").await.assert_error(404, "not_found");
    api.get("/v1/nowhere").await.assert_error(404, "not_found");
    api.get("/v1/pets/1/fur")
        .await
        .assert_error(404, "not_found");
    for uri in ["/v2/pets", "/v0", "/v10/store/orders"] {
        api.get(uri).await.assert_error(404, "unsupported_version");
    }
}

#[actix_web::test]
async fn unserved_methods_are_405_with_allow() {
    let api = start().await;
    let cases = [
        (Method::DELETE, "/v1/pets", "GET, HEAD, POST"),
        (Method::PATCH, "/v1/pets/1", "GET, HEAD, PUT, DELETE"),
        (Method::POST, "/v1/inventory", "GET, HEAD"),
        (Method::PUT, "/v1/inventory/1", "GET, HEAD, PATCH"),
        (
            Method::PUT,
            "/v1/store/orders/1",
            "GET, HEAD, PATCH, DELETE",
        ),
        (Method::POST, "/healthz", "GET, HEAD"),
    ];
    for (method, uri, allow) in cases {
        let reply = api
            .send(TestRequest::default().method(method).uri(uri))
            .await;
        reply.assert_error(405, "method_not_allowed");
        assert_eq!(reply.header("allow"), Some(allow), "{uri}");
    }
}

#[actix_web::test]
async fn bodies_must_be_json_and_small() {
    let api = start().await;
    let plain = TestRequest::post()
        .uri("/v1/categories")
        .insert_header(("content-type", "text/plain"))
        .set_payload(r#"{"name":"Dogs"}"#);
    api.send(plain)
        .await
        .assert_error(415, "unsupported_media_type");
    let none = TestRequest::post()
        .uri("/v1/categories")
        .set_payload(r#"{"name":"Dogs"}"#);
    api.send(none)
        .await
        .assert_error(415, "unsupported_media_type");
    let charset = TestRequest::post()
        .uri("/v1/categories")
        .insert_header(("content-type", "application/json; charset=utf-8"))
        .set_payload(r#"{"name":"Dogs"}"#);
    assert_eq!(api.send(charset).await.status, 201);

    let big = json!({"name": "Cats", "description": "x".repeat(20_000)});
    api.post("/v1/categories", big)
        .await
        .assert_error(413, "payload_too_large");
    let broken = TestRequest::post()
        .uri("/v1/categories")
        .insert_header(("content-type", "application/json"))
        .set_payload("{\"name\":");
    api.send(broken).await.assert_error(400, "invalid_json");
    let trailing = TestRequest::post()
        .uri("/v1/categories")
        .insert_header(("content-type", "application/json"))
        .set_payload("{\"name\":\"A\"} x");
    api.send(trailing).await.assert_error(400, "invalid_json");
    let empty = TestRequest::post()
        .uri("/v1/categories")
        .insert_header(("content-type", "application/json"));
    api.send(empty).await.assert_error(400, "invalid_json");
    // Nothing of the refused requests was stored.
    assert_eq!(
        api.get("/v1/categories")
            .await
            .body
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[actix_web::test]
async fn every_response_carries_a_request_id() {
    let api = start().await;
    let echoed = api
        .send(
            TestRequest::get()
                .uri("/v1")
                .insert_header(("x-request-id", "trace-42.a")),
        )
        .await;
    assert_eq!(echoed.header("x-request-id"), Some("trace-42.a"));
    let replaced = api
        .send(
            TestRequest::get()
                .uri("/v1")
                .insert_header(("x-request-id", "no spaces allowed")),
        )
        .await;
    let generated = replaced.header("x-request-id").unwrap();
    assert_eq!(generated.len(), 16);
    assert!(generated.bytes().all(|b| b.is_ascii_hexdigit()));
    let error = api.get("/v1/pets/abc").await;
    assert!(error.header("x-request-id").is_some());
    let not_found = api.get("/v3").await;
    assert!(not_found.header("x-request-id").is_some());
}

async fn boom() -> HttpResponse {
    panic!("secret detail: /etc/petstore.db");
}

#[actix_web::test]
async fn a_panic_is_a_json_500_without_internals() {
    let (state, _clock, _dir) = common::fresh_state();
    let service = test::init_service(
        app(state, HttpLimits::default()).route("/test-panic", web::get().to(boom)),
    )
    .await;
    let reply = send(&service, TestRequest::get().uri("/test-panic")).await;
    reply.assert_error(500, "internal");
    assert!(
        !reply.body.to_string().contains("secret"),
        "{:?}",
        reply.body
    );
    assert!(reply.header("x-request-id").is_some());
    // The worker survives: the next request is served.
    let after = send(&service, TestRequest::get().uri("/healthz")).await;
    assert_eq!(after.status, 200);
}

#[actix_web::test]
async fn get_pet_announces_its_deprecation_then_is_gone_at_sunset() {
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 0).await;
    let reply = api.get(&format!("/v1/pets/{pet}")).await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.header("deprecation"),
        Some("@1795305600"),
        "2026-11-22T00:00:00Z"
    );
    assert_eq!(
        reply.header("sunset"),
        Some("Thu, 05 Dec 2030 00:00:00 GMT")
    );
    assert_eq!(
        reply.header("link"),
        Some(format!("</v1/pets?id={pet}>; rel=\"successor-version\"").as_str())
    );
    let missing = api.get("/v1/pets/99").await;
    missing.assert_error(404, "not_found");
    assert!(missing.header("deprecation").is_some() && missing.header("sunset").is_some());

    let sunset: chrono::DateTime<chrono::Utc> = "2030-12-05T00:00:00Z".parse().unwrap();
    api.clock.set(sunset - Duration::seconds(1));
    assert_eq!(api.get(&format!("/v1/pets/{pet}")).await.status, 200);
    api.clock.set(sunset);
    let gone = api.get(&format!("/v1/pets/{pet}")).await;
    gone.assert_error(410, "gone");
    assert_eq!(gone.header("sunset"), Some("Thu, 05 Dec 2030 00:00:00 GMT"));
    // The successor keeps working.
    let successor = api.get(&format!("/v1/pets?id={pet}")).await;
    assert_eq!(successor.body[0]["id"], pet);
}

#[actix_web::test]
async fn health_readiness_document_and_docs_are_served() {
    let api = start().await;
    assert_eq!(api.get("/healthz").await.body, json!({"status": "ok"}));
    assert_eq!(api.get("/readyz").await.body, json!({"status": "ready"}));
    let document = api.get("/openapi.json").await;
    assert_eq!(document.status, 200);
    assert_eq!(
        document.body,
        serde_json::to_value(petstore_http::openapi::document()).unwrap()
    );
    let docs = api.get("/docs/").await;
    assert_eq!(docs.status, 200);
    assert!(docs.content_type.starts_with("text/html"));
    assert!(
        docs.body.as_str().unwrap().contains("swagger"),
        "served from the binary"
    );
}

/// `path` of the document under `base`, every parameter (all ids) set to 1.
fn with_ids(base: &str, path: &str) -> String {
    let mut filled = base.trim_end_matches('/').to_owned();
    let mut rest = path;
    while let Some((before, after)) = rest.split_once('{') {
        filled.push_str(before);
        filled.push('1');
        rest = after.split_once('}').map_or("", |(_, tail)| tail);
    }
    filled + rest
}

#[actix_web::test]
async fn head_answers_for_every_get_route_as_the_get_would() {
    let api = start().await;
    // One of each resource, so that every `…/1` exists.
    let pet = api.pet_with_stock("Rex", 5).await;
    let order = api.post("/v1/store/orders", json!({"petId": pet})).await;
    assert_eq!(order.status, 201, "{order:?}");
    api.set_price(pet, 100).await;
    let hold = api
        .post("/v1/store/holds", json!({"lines": [{"petId": pet}]}))
        .await;
    assert_eq!(hold.status, 201, "{hold:?}");
    let hook = api
        .post(
            "/v1/webhooks",
            json!({"url": "https://hooks.example.com/x", "events": ["order.placed"]}),
        )
        .await;
    assert_eq!(hook.status, 201, "{hook:?}");
    let document = serde_json::to_value(petstore_http::openapi::document()).unwrap();
    let base = document["servers"][0]["url"].as_str().unwrap_or_default();
    let mut paths: Vec<String> = document["paths"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, item)| item.get("get").is_some())
        .map(|(path, _)| with_ids(base, path))
        .collect();
    assert!(paths.len() > 10, "{paths:?}");
    paths.extend(["/healthz", "/readyz", "/metrics", "/openapi.json", "/docs/"].map(String::from));
    for path in paths {
        let head = api
            .send(TestRequest::default().method(Method::HEAD).uri(&path))
            .await;
        if path.ends_with("/events/stream") {
            // A stream never ends: its HEAD has the headers and no body at all.
            assert_eq!(head.status, 200, "{path}");
            assert!(head.content_type.starts_with("text/event-stream"));
            assert!(head.body.is_null(), "{path}");
            continue;
        }
        let get = api.get(&path).await;
        assert_eq!(head.status, get.status, "{path}");
        assert!(head.status.is_success(), "{path}: {}", head.status);
        assert_eq!(head.content_type, get.content_type, "{path}");
        assert_eq!(head.header("etag"), get.header("etag"), "{path}");
    }
    // Where nothing answers a GET, nothing answers a HEAD.
    api.send(
        TestRequest::default()
            .method(Method::HEAD)
            .uri("/v1/nothing"),
    )
    .await
    .assert_error(404, "not_found");
}

#[actix_web::test]
async fn large_responses_are_compressed_as_the_client_asks_and_small_ones_are_not() {
    use std::io::Read;
    let api = start().await;
    let plain = api.raw(TestRequest::get().uri("/openapi.json")).await;
    assert!(plain.1.get("content-encoding").is_none());
    for (accept, encoding) in [
        ("gzip", "gzip"),
        ("br", "br"),
        ("zstd", "zstd"),
        ("gzip;q=0.5, br;q=0.9", "br"),
    ] {
        let (status, headers, body) = api
            .raw(
                TestRequest::get()
                    .uri("/openapi.json")
                    .insert_header(("accept-encoding", accept)),
            )
            .await;
        assert_eq!(status, 200);
        assert_eq!(
            headers.get("content-encoding").unwrap(),
            encoding,
            "{accept}"
        );
        assert!(
            headers
                .get("vary")
                .unwrap()
                .to_str()
                .unwrap()
                .contains("accept-encoding")
        );
        assert!(
            body.len() * 4 < plain.2.len(),
            "{accept}: {} of {}",
            body.len(),
            plain.2.len()
        );
        if encoding == "gzip" {
            let mut unpacked = Vec::new();
            flate2::read::GzDecoder::new(&body[..])
                .read_to_end(&mut unpacked)
                .unwrap();
            assert_eq!(unpacked, plain.2, "the same document");
        }
    }
    // Small answers go out as they are; so does everything to a client that accepts nothing
    // offered (no 406).
    let (_, headers, body) = api
        .raw(
            TestRequest::get()
                .uri("/healthz")
                .insert_header(("accept-encoding", "gzip")),
        )
        .await;
    assert!(headers.get("content-encoding").is_none());
    assert_eq!(&body[..], br#"{"status":"ok"}"#);
    let (status, headers, _) = api
        .raw(
            TestRequest::get()
                .uri("/openapi.json")
                .insert_header(("accept-encoding", "compress, identity;q=0")),
        )
        .await;
    assert_eq!(status, 200);
    assert!(headers.get("content-encoding").is_none());
}

#[actix_web::test]
async fn docs_without_its_slash_redirects_to_it() {
    let api = start().await;
    let reply = api.get("/docs").await;
    assert_eq!(reply.status, 308);
    assert_eq!(reply.header("location"), Some("/docs/"));
}

#[actix_web::test]
async fn every_body_must_be_a_json_object_and_errors_name_no_rust_types() {
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 5).await;
    api.post("/v1/store/orders", json!({"petId": pet, "quantity": 1}))
        .await;
    let state = || async {
        (
            api.get(&format!("/v1/pets/{pet}")).await.body,
            api.get(&format!("/v1/inventory/{pet}")).await.body,
            api.get("/v1/store/orders/1").await.body,
            api.get("/v1/events?limit=100").await.body,
        )
    };
    let before = state().await;
    let raw = |method: Method, uri: String, body: &'static str| {
        TestRequest::default()
            .method(method)
            .uri(&uri)
            .insert_header(("content-type", "application/json"))
            .set_payload(body)
    };
    for (method, uri, body) in [
        (Method::POST, "/v1/store/orders".to_owned(), "[1]"),
        (
            Method::POST,
            "/v1/store/orders".to_owned(),
            format!("[{pet}, 1]").leak() as &str,
        ),
        (
            Method::PUT,
            format!("/v1/pets/{pet}"),
            r#"["renamed",1,"sold"]"#,
        ),
        (
            Method::PATCH,
            "/v1/store/orders/1".to_owned(),
            "[null,true]",
        ),
        (Method::POST, "/v1/categories".to_owned(), r#""Dogs""#),
        (Method::PATCH, format!("/v1/inventory/{pet}"), "7"),
        (Method::POST, "/v1/pets".to_owned(), "null"),
        (Method::POST, "/v1/pets".to_owned(), "tru"),
        (Method::POST, "/v1/pets".to_owned(), ""),
    ] {
        let reply = api.send(raw(method.clone(), uri.clone(), body)).await;
        reply.assert_error(400, "invalid_json");
        let message = reply.body["message"].as_str().unwrap();
        for rust in [
            "struct",
            "ident",
            "NewOrder",
            "NewPet",
            "OrderPatch",
            "Inventory",
        ] {
            assert!(
                !message.contains(rust),
                "{method} {uri} {body:?}: {message}"
            );
        }
    }
    assert_eq!(state().await, before, "nothing changed");
}

#[actix_web::test]
async fn a_body_decodes_as_its_content_encoding_says_or_is_refused_in_json() {
    use std::io::Write as _;
    let api = start().await;
    let body = br#"{"name": "Dogs"}"#;
    let mut packer = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    packer.write_all(body).unwrap();
    let packed = packer.finish().unwrap();
    let post = |encoding: &str, payload: Vec<u8>| {
        TestRequest::post()
            .uri("/v1/categories")
            .insert_header(("content-type", "application/json"))
            .insert_header(("content-encoding", encoding))
            .set_payload(payload)
    };
    let created = api.send(post("gzip", packed.clone())).await;
    assert_eq!(created.status.as_u16(), 201, "{created:?}");
    assert_eq!(created.body["name"], "Dogs");

    // Cut short: the decoder's own words (Rust debug text) stay out of the answer.
    let cut = api
        .send(post("gzip", packed[..packed.len() / 2].to_vec()))
        .await;
    cut.assert_error(400, "invalid_json");
    let message = cut.body["message"].as_str().unwrap();
    assert!(
        message.contains("Content-Encoding (gzip)") && !message.contains("Some("),
        "{message}"
    );

    // A coding it cannot decode would otherwise be read as if there were none.
    let unknown = api.send(post("x-foo", body.to_vec())).await;
    unknown.assert_error(415, "unsupported_media_type");
    assert!(
        unknown.body["message"].as_str().unwrap().contains("x-foo"),
        "{unknown:?}"
    );
    let stacked = api.send(post("gzip, br", packed)).await;
    stacked.assert_error(415, "unsupported_media_type");
}

/// CORS, with one origin allowed: its preflight is 204 with what a page may send, before any
/// key or rate limit; its calls' answers (errors too) say the page may read them and which
/// headers; another origin gets no CORS header at all; and with no origin configured, CORS
/// is off.
#[actix_web::test]
async fn an_allowed_origin_may_call_from_a_browser_and_no_other_may() {
    use petstore_http::cors::CorsOrigins;
    let shop = "https://shop.example.com";
    let one = std::num::NonZeroU32::MIN;
    let api = common::start_with(HttpLimits {
        cors: CorsOrigins::new(&[shop.to_owned()]).unwrap(),
        // One call a second: the preflights below would trip it if they counted.
        rate: petstore_http::auth::RateLimits::new(one, one),
        ..HttpLimits::default()
    })
    .await;
    let preflight = |origin: &str| {
        TestRequest::default()
            .method(Method::OPTIONS)
            .uri("/v1/pets")
            .insert_header(("origin", origin))
            .insert_header(("access-control-request-method", "POST"))
            .insert_header((
                "access-control-request-headers",
                "authorization, content-type",
            ))
    };
    for _ in 0..5 {
        let answer = api.send_as(None, preflight(shop)).await;
        assert_eq!(answer.status, 204, "no key, no rate limit: {answer:?}");
        assert_eq!(answer.header("access-control-allow-origin"), Some(shop));
        let methods = answer.header("access-control-allow-methods").unwrap();
        assert!(
            methods.contains("POST") && methods.contains("PATCH"),
            "{methods}"
        );
        let headers = answer.header("access-control-allow-headers").unwrap();
        for needed in [
            "Authorization",
            "Content-Type",
            "If-Match",
            "Idempotency-Key",
            "traceparent",
        ] {
            assert!(headers.contains(needed), "{headers}");
        }
        assert_eq!(answer.header("access-control-max-age"), Some("600"));
        assert!(answer.header("access-control-allow-credentials").is_none());
    }

    let call = api
        .send_as(
            Some(&api.admin),
            TestRequest::get()
                .uri("/v1/pets")
                .insert_header(("origin", shop)),
        )
        .await;
    assert_eq!(call.status, 200);
    assert_eq!(call.header("access-control-allow-origin"), Some(shop));
    let exposed = call.header("access-control-expose-headers").unwrap();
    for header in [
        "ETag",
        "Location",
        "Link",
        "RateLimit",
        "RateLimit-Policy",
        "Retry-After",
        "X-Request-Id",
    ] {
        assert!(exposed.contains(header), "{exposed}");
    }
    assert!(call.header("vary").is_some_and(|v| v.contains("Origin")));
    let refused = api
        .send_as(
            None,
            TestRequest::get()
                .uri("/v1/pets")
                .insert_header(("origin", shop)),
        )
        .await;
    refused.assert_error(401, "unauthorized");
    assert_eq!(
        refused.header("access-control-allow-origin"),
        Some(shop),
        "a page can read why it was refused"
    );

    let stranger = "https://evil.example.net";
    let answer = api.send_as(None, preflight(stranger)).await;
    assert_ne!(answer.status, 204);
    assert!(
        answer.header("access-control-allow-origin").is_none(),
        "{answer:?}"
    );
    let call = api
        .send_as(
            Some(&api.admin),
            TestRequest::get()
                .uri("/v1/categories")
                .insert_header(("origin", stranger)),
        )
        .await;
    assert!(call.header("access-control-allow-origin").is_none());

    let off = start().await;
    let answer = off.send_as(None, preflight(shop)).await;
    assert_ne!(answer.status, 204, "off unless configured");
    assert!(answer.header("access-control-allow-origin").is_none());
}

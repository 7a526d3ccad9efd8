//! Webhooks end to end: the binary delivering to a receiver on 127.0.0.1 that checks every
//! signature, fails when told to, and logs what it got; and the service being killed and
//! started again in the middle.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use crate::binary;
use crate::common;

use std::io::{BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::test::TestRequest;
use binary::{IncomingRequest, Server, json_body, serve_with};
use petstore_core::Role;
use petstore_core::WebhookSecret;
use petstore_store::testing::TestDatabase;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::Value;
use serde_json::json;

/// One request the receiver got.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub id: String,
    pub timestamp: i64,
    pub signature: String,
    pub body: String,
    /// The W3C `traceparent` header, or "" without one.
    pub traceparent: String,
    /// What the receiver answered.
    pub status: u16,
}

/// A webhook receiver: answers 503 to the next `failures` requests, 204 afterwards.
#[derive(Clone)]
pub(crate) struct Receiver {
    pub url: String,
    log: Arc<Mutex<Vec<Received>>>,
    failures: Arc<AtomicUsize>,
}

impl Receiver {
    /// A plain HTTP receiver.
    pub(crate) fn start() -> Self {
        Self::listen("http", None)
    }

    /// An HTTPS receiver for `localhost`, with a certificate from the test CA
    /// (`tests/fixtures/ca.pem`, which only these tests trust).
    fn start_tls() -> Self {
        let fixture = |name: &str| {
            std::fs::read(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/fixtures")
                    .join(name),
            )
            .unwrap()
        };
        let chain = CertificateDer::pem_slice_iter(&fixture("receiver.pem"))
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_slice(&fixture("receiver-key.pem")).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        Self::listen("https", Some(Arc::new(config)))
    }

    fn listen(scheme: &str, tls: Option<Arc<rustls::ServerConfig>>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let host = if tls.is_some() {
            "localhost"
        } else {
            "127.0.0.1"
        };
        let receiver = Receiver {
            url: format!("{scheme}://{host}:{port}/hooks/petstore"),
            log: Arc::default(),
            failures: Arc::default(),
        };
        let shared = receiver.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let shared = shared.clone();
                let tls = tls.clone();
                std::thread::spawn(move || match tls {
                    None => shared.answer(stream),
                    Some(config) => {
                        let connection = rustls::ServerConnection::new(config).unwrap();
                        shared.answer(rustls::StreamOwned::new(connection, stream));
                    }
                });
            }
        });
        receiver
    }

    /// Reads one request, logs it, answers and closes the connection. A client that gives up
    /// before sending a request (a failed TLS handshake) is not logged.
    fn answer(&self, stream: impl Read + Write) {
        let mut reader = BufReader::new(stream);
        let Some(request) = IncomingRequest::read(&mut reader) else {
            return;
        };
        assert!(
            request.line.starts_with("POST /hooks/petstore "),
            "{}",
            request.line
        );
        let header = |name: &str| request.header(name).to_owned();
        assert_eq!(header("content-type"), "application/json");
        let failing = self
            .failures
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        let status = if failing { 503 } else { 204 };
        self.log.lock().unwrap().push(Received {
            id: header("webhook-id"),
            timestamp: header("webhook-timestamp").parse().unwrap(),
            signature: header("webhook-signature"),
            body: String::from_utf8(request.body.clone()).unwrap(),
            traceparent: header("traceparent"),
            status,
        });
        let mut stream = reader.into_inner();
        // Written in one go and flushed, so a TLS stream sends it before closing.
        let reason = if failing {
            "Service Unavailable"
        } else {
            "No Content"
        };
        let _ = write!(
            stream,
            "HTTP/1.1 {status} {reason}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        let _ = stream.flush();
    }

    fn fail_next(&self, count: usize) {
        self.failures.store(count, Ordering::SeqCst);
    }

    pub(crate) fn log(&self) -> Vec<Received> {
        self.log.lock().unwrap().clone()
    }

    /// The ids it accepted (answered 2xx), in the order it got them.
    fn accepted(&self) -> Vec<u64> {
        self.log()
            .iter()
            .filter(|r| r.status < 300)
            .map(|r| r.id.parse().unwrap())
            .collect()
    }

    /// Waits until `done` holds for the log.
    fn wait_for(&self, what: &str, done: impl Fn(&[Received]) -> bool) {
        eventually(what, || done(&self.log()).then_some(()));
    }
}

const ADMIN: &str = "webhook-admin-0123456789abcdef0123456789";

/// Retries come fast, and a killed process's lease on a subscription runs out soon, so the
/// test is quick; everything else as deployed. An attempt times out well within the lease,
/// as it must for a sender to go on without renewing before each one.
fn start(database: &str) -> Server {
    serve_with(
        database,
        Some(ADMIN),
        &[
            "--webhook-lease-ms",
            "2000",
            "--webhook-timeout-ms",
            "500",
            "--webhook-allow-private-targets",
            "--webhook-first-retry-ms",
            "50",
            "--webhook-max-retry-delay-ms",
            "200",
            "--webhook-poll-ms",
            "20",
        ],
    )
}

/// The ids of the recorded events of `types`, from the feed.
fn event_ids(server: &Server, types: &[&str]) -> Vec<u64> {
    let feed = json_body(&server.get("/v1/events?limit=100", ADMIN));
    feed.as_array()
        .unwrap()
        .iter()
        .filter(|e| types.contains(&e["type"].as_str().unwrap()))
        .map(|e| e["id"].as_str().unwrap().parse().unwrap())
        .collect()
}

/// Polls `probe` until it gives something, for at most 30 seconds.
fn eventually<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The first recorded delivery attempt of a subscription, once there is one.
fn first_attempt(server: &Server, hook_id: i64) -> Value {
    eventually("a recorded attempt", || {
        let deliveries =
            json_body(&server.get(&format!("/v1/webhooks/{hook_id}/deliveries"), ADMIN));
        deliveries.as_array().and_then(|d| d.first()).cloned()
    })
}

/// Every request carries a valid signature of its body, made recently, and the body is the
/// CloudEvent the `webhook-id` names.
fn assert_signed(log: &[Received], secret: &WebhookSecret) {
    let now = chrono::Utc::now().timestamp();
    for received in log {
        assert!(
            secret.verify(
                &received.id,
                received.timestamp,
                received.body.as_bytes(),
                &received.signature
            ),
            "a valid signature: {received:?}"
        );
        assert!((now - received.timestamp).abs() < 120, "a recent timestamp");
        let event: Value = serde_json::from_str(&received.body).unwrap();
        assert_eq!(event["id"], received.id.as_str());
        assert_eq!(event["specversion"], "1.0");
    }
    let forged = &log[0];
    assert!(
        !secret.verify(
            &forged.id,
            forged.timestamp,
            b"{\"tampered\":true}",
            &forged.signature
        ),
        "a changed body does not verify"
    );
}

/// Attempts come one event at a time: a retry repeats the event, never skips ahead of it.
fn assert_in_order(log: &[Received]) {
    let ids: Vec<u64> = log.iter().map(|r| r.id.parse().unwrap()).collect();
    assert!(
        ids.windows(2).all(|w| w[0] <= w[1]),
        "attempts in event order: {ids:?}"
    );
}

#[test]
fn deliveries_arrive_signed_in_order_through_failures_and_a_killed_service() {
    let database = TestDatabase::new("webhooks");
    let receiver = Receiver::start();
    let server = start(&database.arg());

    let created = server.post(
        "/v1/webhooks",
        ADMIN,
        &format!(
            r#"{{"url": "{}", "events": ["category.created", "category.deleted"]}}"#,
            receiver.url
        ),
    );
    assert!(created.starts_with("HTTP/1.1 201"), "{created}");
    let webhook = json_body(&created);
    let secret = WebhookSecret::parse(webhook["secret"].as_str().unwrap()).unwrap();
    let hook_id = webhook["id"].as_i64().unwrap();

    // The receiver fails the first three attempts; every event still arrives, in order.
    receiver.fail_next(3);
    // The first change comes from a traced request: its deliveries, retries included,
    // continue that trace; the others were not traced and carry none.
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let traced = server.send(
        "POST",
        "/v1/categories",
        ADMIN,
        &[("traceparent", traceparent)],
        Some(r#"{"name": "Dogs"}"#),
    );
    assert_eq!(traced.map(|(status, _)| status), Some(201));
    for name in ["Cats", "Birds", "Fish", "Lizards"] {
        server.create_category(ADMIN, name);
    }
    // A pet is not a category event: the subscription steps over it.
    let pet = server.post("/v1/pets", ADMIN, r#"{"name": "Rex", "categoryId": 1}"#);
    assert!(pet.starts_with("HTTP/1.1 201"), "{pet}");
    let expected = event_ids(&server, &["category.created"]);
    assert_eq!(expected.len(), 5);
    receiver.wait_for("five deliveries", |log| {
        log.iter().filter(|r| r.status < 300).count() >= 5
    });
    let log = receiver.log();
    assert_eq!(receiver.accepted(), expected, "each event once, in order");
    assert_eq!(
        log.iter()
            .take(3)
            .map(|r| (r.id.parse::<u64>().unwrap(), r.status))
            .collect::<Vec<_>>(),
        vec![(expected[0], 503); 3],
        "the first event is retried until it is accepted, before any other is sent"
    );
    assert_signed(&log, &secret);
    assert_in_order(&log);
    for received in &log {
        let caused_by_traced = received.id == expected[0].to_string();
        let sent = if caused_by_traced { traceparent } else { "" };
        assert_eq!(received.traceparent, sent, "{received:?}");
    }

    // The receiver answers before the service records the answer: wait for the record.
    // Every failure is kept; successes as a count on the subscription and, per record, the
    // latest.
    let deliveries = eventually("the last delivery recorded", || {
        let deliveries = json_body(&server.get(
            &format!("/v1/webhooks/{hook_id}/deliveries?limit=100"),
            ADMIN,
        ));
        let last = deliveries.as_array()?.last()?.clone();
        (last["eventId"].as_u64()? == expected[4]).then_some(deliveries)
    });
    let attempts: Vec<(u64, u64, &str, i64)> = deliveries
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["eventId"].as_u64().unwrap(),
                d["attempt"].as_u64().unwrap(),
                d["outcome"].as_str().unwrap(),
                d["statusCode"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        attempts[..3],
        [
            (expected[0], 1, "failed", 503),
            (expected[0], 2, "failed", 503),
            (expected[0], 3, "failed", 503),
        ],
        "{deliveries}"
    );
    assert!(
        attempts[3..]
            .iter()
            .all(|a| a.2 == "delivered" && a.3 == 204),
        "after the failures, only the successes of each record: {deliveries}"
    );
    assert!(attempts.len() <= 3 + 5, "{deliveries}");
    let state = json_body(&server.get(&format!("/v1/webhooks/{hook_id}"), ADMIN));
    assert_eq!(state["delivery"]["deliveredEvents"], 5, "{state}");
    let metrics = server.get("/metrics", ADMIN);
    assert!(
        metrics.contains("petstore_webhook_delivery_attempts_total{outcome=\"delivered\"} 5"),
        "{metrics}"
    );
    assert!(metrics.contains("petstore_webhook_delivery_attempts_total{outcome=\"failed\"} 3"));
    // The dispatcher's next look, after the record, finds it caught up.
    let caught_up = format!("petstore_webhook_lag_events{{webhook=\"{hook_id}\"}} 0");
    eventually("the lag metric at 0", || {
        server
            .get("/metrics", ADMIN)
            .contains(&caught_up)
            .then_some(())
    });
    // Failed attempts are logged one by one at WARN; successes at DEBUG, and at INFO as the
    // count each record wrote.
    let mut lines = Vec::new();
    let (failed, recorded) = eventually("the attempts in the log", || {
        lines.extend(server.stderr.try_iter());
        let events: Vec<Value> = lines
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .collect();
        let attempts: Vec<&Value> = events
            .iter()
            .filter(|event| event["fields"]["message"] == "webhook delivery")
            .collect();
        let recorded: u64 = events
            .iter()
            .filter(|event| event["fields"]["message"] == "webhook deliveries recorded")
            .map(|event| event["fields"]["delivered"].as_u64().unwrap_or(0))
            .sum();
        (recorded >= 5).then(|| {
            (
                attempts
                    .iter()
                    .map(|e| (e["fields"]["outcome"].clone(), e["level"].clone()))
                    .collect::<Vec<_>>(),
                recorded,
            )
        })
    });
    assert_eq!(recorded, 5);
    assert_eq!(
        failed,
        vec![(json!("failed"), json!("WARN")); 3],
        "only failures are logged one by one at INFO or above"
    );

    // The receiver goes down; changes keep coming; the service is killed mid-way.
    receiver.fail_next(usize::MAX);
    for name in ["Horses", "Rabbits", "Snakes"] {
        server.create_category(ADMIN, name);
    }
    let delete = server.delete("/v1/categories/5", ADMIN);
    assert!(delete.starts_with("HTTP/1.1 204"), "{delete}");
    let expected = event_ids(&server, &["category.created", "category.deleted"]);
    assert_eq!(expected.len(), 9);
    receiver.wait_for("a failed attempt at the sixth event", |log| {
        log.iter()
            .any(|r| r.status == 503 && r.id == expected[5].to_string())
    });
    server.kill();

    // Back up: the receiver recovers, the service restarts, and picks up where it stopped.
    receiver.fail_next(0);
    let server = start(&database.arg());
    receiver.wait_for("all nine deliveries", |log| {
        log.iter().filter(|r| r.status < 300).count() >= 9
    });
    let log = receiver.log();
    assert_eq!(receiver.accepted(), expected, "nothing lost, nothing twice");
    assert_signed(&log, &secret);
    assert_in_order(&log);
    let state = eventually("the cursor at the last event", || {
        let state = json_body(&server.get(&format!("/v1/webhooks/{hook_id}"), ADMIN));
        (state["delivery"]["deliveredThrough"] == expected[8]).then_some(state)
    });
    assert_eq!(state["delivery"]["failedAttempts"], 0);

    // The receiver lost the last three: an admin has them sent again, in order.
    let before = receiver.log().len();
    let resent = server.post(
        &format!("/v1/webhooks/{hook_id}/resend"),
        ADMIN,
        &format!(r#"{{"fromEventId": {}}}"#, expected[6]),
    );
    assert!(resent.starts_with("HTTP/1.1 200"), "{resent}");
    assert_eq!(
        json_body(&resent)["delivery"]["deliveredThrough"],
        expected[6] - 1
    );
    receiver.wait_for("the three sent again", |log| {
        log[before..].iter().filter(|r| r.status < 300).count() >= 3
    });
    let again: Vec<u64> = receiver.log()[before..]
        .iter()
        .map(|r| r.id.parse().unwrap())
        .collect();
    assert_eq!(again, expected[6..], "from that event on, in order");
    let (code, _) = server.terminate();
    assert_eq!(code, Some(0));
}

#[actix_web::test]
async fn a_resend_moves_the_cursor_back_and_never_past_what_is_owed() {
    let api = common::start().await;
    let created = api
        .post(
            "/v1/webhooks",
            json!({"url": "https://hooks.example.com/petstore", "events": ["category.created"]}),
        )
        .await;
    let id = created.body["id"].as_i64().unwrap();
    let cursor = created.body["delivery"]["deliveredThrough"]
        .as_i64()
        .unwrap();
    let resend = |from: i64| {
        TestRequest::post()
            .uri(&format!("/v1/webhooks/{id}/resend"))
            .set_json(json!({"fromEventId": from}))
    };
    for role in [Role::Staff, Role::Customer] {
        let key = api.key(role, 7 + role as u8).await;
        api.send_as(Some(&key), resend(1))
            .await
            .assert_error(403, "forbidden");
    }
    let refused = api.send(resend(cursor + 2)).await;
    refused.assert_error(409, "invalid_transition");
    assert!(
        refused.body.to_string().contains("fromEventId"),
        "{refused:?}"
    );
    let unknown = TestRequest::post()
        .uri("/v1/webhooks/999/resend")
        .set_json(json!({"fromEventId": 1}));
    api.send(unknown).await.assert_error(404, "not_found");
    let stale = resend(1).insert_header(("if-match", "\"stale\""));
    api.send(stale)
        .await
        .assert_error(412, "precondition_failed");

    let moved = api.send(resend(1)).await;
    assert_eq!(moved.status, 200, "{moved:?}");
    assert_eq!(
        moved.body["delivery"]["deliveredThrough"], 0,
        "before the first event"
    );
    assert!(moved.header("etag").is_some());
    let read = api.get(&format!("/v1/webhooks/{id}")).await;
    assert_eq!(read.body["delivery"]["deliveredThrough"], 0);
}

#[actix_web::test]
async fn subscriptions_are_created_listed_read_and_deleted_by_admins_only() {
    let api = common::start().await;
    let created = api
        .post(
            "/v1/webhooks",
            json!({"url": "https://hooks.example.com/petstore", "events": ["order.placed"]}),
        )
        .await;
    assert_eq!(created.status, 201, "{created:?}");
    let id = created.body["id"].as_i64().unwrap();
    assert_eq!(
        created.header("location"),
        Some(format!("/v1/webhooks/{id}").as_str())
    );
    let secret = created.body["secret"].as_str().unwrap();
    assert!(WebhookSecret::parse(secret).is_ok(), "{secret}");
    assert_eq!(created.body["delivery"]["deliveredThrough"], 0);

    let read = api.get(&format!("/v1/webhooks/{id}")).await;
    assert_eq!(read.status, 200);
    assert!(read.header("etag").is_some());
    assert_eq!(read.body["url"], "https://hooks.example.com/petstore");
    assert_eq!(read.body["events"], json!(["order.placed"]));
    assert!(
        !read.body.to_string().contains(secret) && read.body.get("secret").is_none(),
        "the secret is shown once"
    );
    let listed = api.get("/v1/webhooks").await;
    assert_eq!(listed.body.as_array().map(Vec::len), Some(1));
    assert!(!listed.body.to_string().contains(secret));
    let deliveries = api.get(&format!("/v1/webhooks/{id}/deliveries")).await;
    assert_eq!(
        (deliveries.status.as_u16(), deliveries.body.clone()),
        (200, json!([]))
    );

    for role in [Role::Staff, Role::Customer] {
        let key = api.key(role, 7 + role as u8).await;
        let refused = api
            .send_as(Some(&key), TestRequest::get().uri("/v1/webhooks"))
            .await;
        refused.assert_error(403, "forbidden");
    }

    let deleted = api.delete(&format!("/v1/webhooks/{id}")).await;
    assert_eq!(deleted.status, 204);
    api.get(&format!("/v1/webhooks/{id}"))
        .await
        .assert_error(404, "not_found");
    api.get(&format!("/v1/webhooks/{id}/deliveries"))
        .await
        .assert_error(404, "not_found");
}

#[actix_web::test]
async fn bad_subscriptions_are_refused_with_the_field_named() {
    let api = common::start().await;
    for (body, field) in [
        (
            json!({"url": "ftp://example.com/", "events": ["pet.created"]}),
            "url",
        ),
        (
            json!({"url": "https://user:pw@example.com/", "events": ["pet.created"]}),
            "url",
        ),
        (
            json!({"url": "https://example.com/#x", "events": ["pet.created"]}),
            "url",
        ),
        // No IPv6 literals: an IPv6 receiver is reached by name.
        (
            json!({"url": "http://[::1]/", "events": ["pet.created"]}),
            "url",
        ),
        (
            json!({"url": "https://example.com/", "events": []}),
            "events",
        ),
        (
            json!({"url": "https://example.com/", "events": ["pet.exploded"]}),
            "events",
        ),
        (
            json!({"url": "https://example.com/", "events": ["pet.created", "pet.created"]}),
            "events",
        ),
        (json!({"url": "https://example.com/"}), "events"),
        (
            json!({"url": "https://example.com/", "events": ["pet.created"], "secret": "mine"}),
            "secret",
        ),
    ] {
        let reply = api.post("/v1/webhooks", body.clone()).await;
        reply.assert_error(400, "validation_failed");
        assert!(
            reply.body["message"].as_str().unwrap().contains(field),
            "{body}: {reply:?}"
        );
    }
    // Valid, but aimed at the service's own network: refused unless the operator allows it.
    for url in [
        "http://127.0.0.1:9000/",
        "http://169.254.169.254/latest",
        "http://10.0.0.7/hook",
    ] {
        let reply = api
            .post(
                "/v1/webhooks",
                json!({"url": url, "events": ["pet.created"]}),
            )
            .await;
        reply.assert_error(422, "forbidden_target");
    }
    let replayable = api
        .send(
            TestRequest::post()
                .uri("/v1/webhooks")
                .insert_header(("idempotency-key", "once"))
                .set_json(json!({"url": "https://example.com/", "events": ["pet.created"]})),
        )
        .await;
    replayable.assert_error(400, "invalid_parameter");
    assert_eq!(
        api.get("/v1/webhooks").await.body,
        json!([]),
        "nothing stored"
    );
}

/// The value of `petstore_webhook_failed_attempts` for subscription `hook_id` on the node's
/// `/metrics`, once the dispatcher has looked at it.
fn failed_attempts(server: &Server, hook_id: i64) -> Option<u64> {
    let text = server.get("/metrics", ADMIN);
    let series = format!("petstore_webhook_failed_attempts{{webhook=\"{hook_id}\"}} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&series))
        .map(|value| value.trim().parse().unwrap())
}

/// A receiver that refuses everything keeps its subscription's failed-attempts gauge above 0,
/// rising with each retry, whatever the other subscriptions do; the first success sets it
/// back to 0 (what `PetstoreWebhookFailing` reads, docs/deploy/alerts.yml).
#[test]
fn a_refusing_receiver_raises_its_subscriptions_failed_attempts_until_a_success() {
    let database = TestDatabase::new("failed_attempts");
    let (refusing, answering) = (Receiver::start(), Receiver::start());
    let server = start(&database.arg());
    let subscribe = |receiver: &Receiver| {
        let created = server.post(
            "/v1/webhooks",
            ADMIN,
            &format!(
                r#"{{"url": "{}", "events": ["category.created"]}}"#,
                receiver.url
            ),
        );
        assert!(created.starts_with("HTTP/1.1 201"), "{created}");
        json_body(&created)["id"].as_i64().unwrap()
    };
    let (failing, fine) = (subscribe(&refusing), subscribe(&answering));
    eventually("both subscriptions on /metrics", || {
        (failed_attempts(&server, failing) == Some(0) && failed_attempts(&server, fine) == Some(0))
            .then_some(())
    });

    refusing.fail_next(usize::MAX);
    server.create_category(ADMIN, "Dogs");
    let counted = eventually("three failed attempts counted", || {
        failed_attempts(&server, failing).filter(|n| *n >= 3)
    });
    answering.wait_for("the other receiver's delivery", |log| {
        log.iter().any(|r| r.status < 300)
    });
    assert_eq!(
        failed_attempts(&server, fine),
        Some(0),
        "a subscription whose receiver answers counts no failure"
    );
    // Between retries, while the subscription waits out its delay, the count stays.
    for _ in 0..10 {
        let now = failed_attempts(&server, failing).unwrap();
        assert!(
            now >= counted,
            "{now} after {counted}: the count never falls while failing"
        );
        std::thread::sleep(Duration::from_millis(30));
    }
    assert!(
        refusing.log().iter().all(|r| r.status >= 300),
        "nothing was delivered"
    );

    refusing.fail_next(0);
    refusing.wait_for("the delivery", |log| log.iter().any(|r| r.status < 300));
    eventually("the count back to 0 after the success", || {
        (failed_attempts(&server, failing) == Some(0)).then_some(())
    });
}

#[test]
fn a_name_that_resolves_to_a_private_address_is_never_contacted() {
    let database = TestDatabase::new("ssrf");
    let receiver = Receiver::start();
    // Private targets are not allowed (the default): a literal 127.0.0.1 would be refused
    // when subscribing, but a name is only known when resolved, at delivery.
    let server = serve_with(database.arg(), Some(ADMIN), &["--webhook-poll-ms", "20"]);
    let url = receiver.url.replace("127.0.0.1", "localhost");
    let created = server.post(
        "/v1/webhooks",
        ADMIN,
        &format!(r#"{{"url": "{url}", "events": ["category.created"]}}"#),
    );
    assert!(created.starts_with("HTTP/1.1 201"), "{created}");
    let hook_id = json_body(&created)["id"].as_i64().unwrap();
    server.create_category(ADMIN, "Dogs");

    let attempt = first_attempt(&server, hook_id);
    assert_eq!(attempt["outcome"], "failed", "{attempt}");
    assert!(attempt.get("statusCode").is_none(), "{attempt}");
    assert!(
        attempt["error"]
            .as_str()
            .unwrap()
            .contains("no public address"),
        "{attempt}"
    );
    assert!(
        attempt["nextAttemptAt"].is_string(),
        "retried later: {attempt}"
    );
    assert!(
        receiver.log().is_empty(),
        "the receiver was never contacted"
    );
}

#[test]
fn https_receivers_get_deliveries_when_their_ca_is_trusted() {
    let receiver = Receiver::start_tls();
    let ca = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ca.pem");
    let subscribe = |server: &Server| {
        let created = server.post(
            "/v1/webhooks",
            ADMIN,
            &format!(
                r#"{{"url": "{}", "events": ["category.created"]}}"#,
                receiver.url
            ),
        );
        assert!(created.starts_with("HTTP/1.1 201"), "{created}");
        let body = json_body(&created);
        (
            body["id"].as_i64().unwrap(),
            WebhookSecret::parse(body["secret"].as_str().unwrap()).unwrap(),
        )
    };

    // Without the test CA, the receiver's certificate is not trusted: the attempt fails in
    // the handshake, before anything is sent.
    let untrusting_database = TestDatabase::new("untrusting");
    let untrusting = serve_with(
        untrusting_database.arg(),
        Some(ADMIN),
        &["--webhook-allow-private-targets", "--webhook-poll-ms", "20"],
    );
    let (hook_id, _) = subscribe(&untrusting);
    untrusting.create_category(ADMIN, "Dogs");
    let attempt = first_attempt(&untrusting, hook_id);
    assert_eq!(attempt["outcome"], "failed", "{attempt}");
    assert!(attempt.get("statusCode").is_none(), "{attempt}");
    assert!(
        receiver.log().is_empty(),
        "nothing was sent: {:?}",
        receiver.log()
    );
    let error = attempt["error"].as_str().unwrap();
    assert!(error.contains("certificate"), "says why: {error}");
    drop(untrusting);

    // With it, the delivery goes through TLS and verifies.
    let trusting_database = TestDatabase::new("trusting");
    let trusting = serve_with(
        trusting_database.arg(),
        Some(ADMIN),
        &[
            "--webhook-allow-private-targets",
            "--webhook-poll-ms",
            "20",
            "--webhook-ca-file",
            ca.to_str().unwrap(),
        ],
    );
    let (_, secret) = subscribe(&trusting);
    trusting.create_category(ADMIN, "Cats");
    receiver.wait_for("a delivery over TLS", |log| !log.is_empty());
    let log = receiver.log();
    assert_eq!(log[0].status, 204);
    assert_signed(&log, &secret);
    let event: Value = serde_json::from_str(&log[0].body).unwrap();
    assert_eq!(event["type"], "category.created");
    assert_eq!(event["data"]["name"], "Cats");
}

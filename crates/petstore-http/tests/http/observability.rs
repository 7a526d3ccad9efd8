//! What operators see: `/metrics`, and one log line per request carrying its id and route.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use crate::common;

use std::num::NonZeroU32;

use actix_web::test::TestRequest;
use petstore_http::app::HttpLimits;
use petstore_http::auth::RateLimits;
use serde_json::json;

use common::{start, start_with};

/// The value of the metric line starting with `prefix` (name and labels).
fn metric(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|line| line.starts_with(prefix))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

#[actix_web::test]
async fn metrics_count_requests_by_route_pattern_never_by_raw_path() {
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 10).await;
    // Twice: the second is counted through the handles the route kept from the first.
    api.get(&format!("/v1/pets/{pet}")).await;
    api.get(&format!("/v1/pets/{pet}")).await;
    api.get("/v1/pets/12345").await;
    for junk in [
        "/v1/pets/abc",
        "/wp-admin/setup.php",
        "/v1/%2e%2e/etc",
        "/v9/x",
    ] {
        api.get(junk).await;
    }
    let reply = api.send_as(None, TestRequest::get().uri("/metrics")).await;
    assert_eq!(reply.status, 200, "no key needed");
    assert!(reply.content_type.starts_with("text/plain; version=0.0.4"));
    let text = reply.body.as_str().unwrap().to_owned();

    let ok = r#"petstore_http_requests_total{method="GET",route="/v1/pets/{petId}",status="200"}"#;
    let missing =
        r#"petstore_http_requests_total{method="GET",route="/v1/pets/{petId}",status="404"}"#;
    let invalid =
        r#"petstore_http_requests_total{method="GET",route="/v1/pets/{petId}",status="400"}"#;
    assert_eq!(metric(&text, ok), Some(2.0), "{text}");
    assert_eq!(
        metric(
            &text,
            r#"petstore_http_request_duration_seconds_count{method="GET",route="/v1/pets/{petId}"}"#
        ),
        Some(4.0),
        "two found, one missing, one invalid"
    );
    assert_eq!(metric(&text, missing), Some(1.0));
    assert_eq!(
        metric(&text, invalid),
        Some(1.0),
        "/v1/pets/abc is counted under its pattern"
    );
    assert!(
        metric(
            &text,
            r#"petstore_http_requests_total{method="GET",route="unmatched",status="404"}"#
        ) >= Some(3.0)
    );
    for raw in ["wp-admin", "etc", "12345", "abc", "/v9"] {
        assert!(!text.contains(raw), "a raw path made a series: {raw}");
    }
    assert!(text.contains(r#"petstore_http_request_duration_seconds_bucket{le="0.00025",method="GET",route="/v1/pets/{petId}"}"#)
        || text.contains(r#"petstore_http_request_duration_seconds_bucket{method="GET",route="/v1/pets/{petId}",le="#));
    assert_eq!(
        metric(&text, "petstore_http_requests_in_flight "),
        Some(1.0),
        "the scrape itself"
    );
    assert!(
        metric(&text, "petstore_db_connections ") >= Some(2.0),
        "writer and readers"
    );
}

#[actix_web::test]
async fn metrics_negotiate_their_format_and_carry_process_and_build_figures() {
    let api = start().await;
    api.send_as(None, TestRequest::get().uri("/healthz")).await;
    let classic = api.send_as(None, TestRequest::get().uri("/metrics")).await;
    assert!(
        classic
            .content_type
            .starts_with("text/plain; version=0.0.4")
    );
    assert_eq!(classic.header("vary"), Some("Accept"));
    let text = classic.body.as_str().unwrap();
    assert!(
        text.contains("# TYPE petstore_http_requests_total counter"),
        "{text}"
    );
    assert!(
        text.contains("# HELP petstore_http_requests_total "),
        "{text}"
    );
    assert!(
        !text.contains("# EOF") && !text.contains("# UNIT"),
        "{text}"
    );
    let build = format!("petstore_build_info{{version=\"{}\"}} ", built_version());
    assert_eq!(metric(text, &build), Some(1.0), "{text}");
    for name in [
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_virtual_memory_bytes",
        "process_start_time_seconds",
        "process_threads",
        "process_open_fds",
        "process_max_fds",
    ] {
        let value = metric(text, &format!("{name} "));
        assert!(value.is_some_and(|v| v > 0.0), "{name}: {text}");
    }
    assert!(text.contains("# TYPE process_cpu_seconds_total counter"));

    let open = api
        .send_as(
            None,
            TestRequest::get().uri("/metrics").insert_header((
                "accept",
                "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5",
            )),
        )
        .await;
    assert!(
        open.content_type
            .starts_with("application/openmetrics-text")
    );
    let text = open.body.as_str().unwrap();
    assert!(text.trim_end().ends_with("# EOF"), "{text}");
    assert!(
        text.contains("# TYPE petstore_http_requests counter"),
        "{text}"
    );
}

#[actix_web::test]
async fn metrics_count_placed_orders_but_not_replays() {
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 10).await;
    let order = |key: Option<&str>| {
        let request = TestRequest::post()
            .uri("/v1/store/orders")
            .set_json(json!({"petId": pet}));
        match key {
            Some(key) => request.insert_header(("idempotency-key", key.to_owned())),
            None => request,
        }
    };
    api.send(order(None)).await;
    api.send(order(Some("once"))).await;
    api.send(order(Some("once"))).await;
    api.send(
        TestRequest::post()
            .uri("/v1/store/orders")
            .set_json(json!({"petId": pet, "quantity": 50})),
    )
    .await;
    let text = api.get("/metrics").await.body.as_str().unwrap().to_owned();
    assert_eq!(
        metric(&text, "petstore_orders_placed_total "),
        Some(2.0),
        "{text}"
    );
}

#[actix_web::test]
async fn metrics_count_rate_limit_refusals() {
    let one = NonZeroU32::new(1).unwrap();
    let api = start_with(HttpLimits {
        rate: RateLimits::new(one, one),
        ..HttpLimits::default()
    })
    .await;
    api.get("/v1/pets").await;
    api.get("/v1/pets").await.assert_error(429, "rate_limited");
    api.get("/v1/pets").await.assert_error(429, "rate_limited");
    let text = api.get("/metrics").await.body.as_str().unwrap().to_owned();
    assert_eq!(
        metric(&text, "petstore_rate_limited_requests_total "),
        Some(2.0),
        "{text}"
    );
}

#[actix_web::test]
async fn each_request_logs_one_json_line_with_its_id_route_status_and_latency() {
    let logs = common::captured_logs();
    let api = start().await;
    let reply = api
        .send(
            TestRequest::get()
                .uri("/v1/pets/77")
                .insert_header(("x-request-id", "trace-me-77"))
                .insert_header((
                    "traceparent",
                    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                )),
        )
        .await;
    assert_eq!(reply.status, 404);
    let text = logs.text();
    let line = text
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|event| {
            event["span"]["request_id"] == "trace-me-77"
                && event["fields"]["message"] == "request handled"
        })
        .unwrap_or_else(|| panic!("no line for the request in {text}"));
    assert_eq!(line["span"]["route"], "/v1/pets/{petId}");
    assert_eq!(line["span"]["method"], "GET");
    assert_eq!(line["span"]["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(line["fields"]["status"], 404);
    assert!(line["fields"]["latency_ms"].as_f64().unwrap() >= 0.0);
}

#[actix_web::test]
async fn made_up_methods_and_paths_make_no_new_series() {
    use actix_web::http::Method;
    let api = start().await;
    let series = |text: &str| {
        text.lines()
            .filter(|line| line.starts_with("petstore_http_request"))
            .count()
    };
    // Warm up the series honest traffic makes, then count them.
    for method in ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"] {
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        for path in ["/healthz", "/nowhere"] {
            api.send_as(
                None,
                TestRequest::default().method(method.clone()).uri(path),
            )
            .await;
        }
    }
    let made_up_method = format!("X{}", "Y".repeat(1000));
    api.send_as(
        None,
        TestRequest::default()
            .method(Method::from_bytes(made_up_method.as_bytes()).unwrap())
            .uri("/healthz"),
    )
    .await;
    api.send_as(
        None,
        TestRequest::default()
            .method(Method::from_bytes(b"BREW").unwrap())
            .uri("/nowhere"),
    )
    .await;
    // A scrape counts itself after it renders: the second one shows the first.
    api.send_as(None, TestRequest::get().uri("/metrics")).await;
    let before = api.send_as(None, TestRequest::get().uri("/metrics")).await;
    let before = series(before.body.as_str().unwrap());

    for n in 0..200 {
        let method = format!("M{n}{}", "Z".repeat(n % 50));
        let path = format!("/random/{n}/{}", "p".repeat(n));
        for uri in ["/healthz".to_owned(), path] {
            api.send_as(
                None,
                TestRequest::default()
                    .method(Method::from_bytes(method.as_bytes()).unwrap())
                    .uri(&uri),
            )
            .await;
        }
    }
    let after = api.send_as(None, TestRequest::get().uri("/metrics")).await;
    let text = after.body.as_str().unwrap();
    assert_eq!(series(text), before, "no client-made series:\n{text}");
    assert!(!text.contains("M17Z"), "a made-up method is never a label");
    assert!(
        !text.contains("/random/"),
        "a made-up path is never a label"
    );
    assert!(
        text.contains(r#"method="other""#),
        "made-up methods count as other: {text}"
    );
}

#[actix_web::test]
async fn a_database_file_removed_while_serving_refuses_writes_with_503_and_is_not_ready() {
    use petstore_store::testing::TestDatabase;
    let api = start().await;
    let TestDatabase::Sqlite { path, .. } = api.database() else {
        return; // a SQLite file's concern
    };
    let made = api.post("/v1/categories", json!({"name": "Before"})).await;
    assert_eq!(made.status, 201);
    let ready = api.send_as(None, TestRequest::get().uri("/readyz")).await;
    assert_eq!(ready.status, 200);

    std::fs::remove_file(path).unwrap();
    let refused = api.post("/v1/categories", json!({"name": "After"})).await;
    refused.assert_error(503, "unavailable");
    assert!(refused.header("retry-after").is_some());
    let message = refused.body["message"].as_str().unwrap();
    assert!(
        message.contains("storage") && !message.contains("busy"),
        "the client is told the storage is at fault, not a busy service: {message}"
    );
    let ready = api.send_as(None, TestRequest::get().uri("/readyz")).await;
    ready.assert_error(503, "unavailable");
}

#[actix_web::test]
async fn readiness_answers_within_a_second_while_the_database_keeps_it_waiting() {
    use petstore_core::Store;
    use petstore_store::AnyStore;
    let api = start().await;
    let AnyStore::Sqlite(store) = api.state.store().clone() else {
        return; // the writer held below is SQLite's; PostgreSQL's waits are tested on a proxy
    };
    // A write that keeps the writer connection: readiness proves the database takes writes
    // with a write of its own, which waits for it (up to the connection time-out, 5 s).
    let (release, held) = std::sync::mpsc::channel::<()>();
    let (entered, holding) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        store.write(|_| {
            entered.send(()).unwrap();
            held.recv().unwrap();
            Ok(())
        })
    });
    holding.recv().unwrap();
    let started = std::time::Instant::now();
    let ready = api.send_as(None, TestRequest::get().uri("/readyz")).await;
    let took = started.elapsed();
    ready.assert_error(503, "unavailable");
    assert!(took < std::time::Duration::from_secs(1), "took {took:?}");
    release.send(()).unwrap();
    holder.join().unwrap().unwrap();
    let ready = api.send_as(None, TestRequest::get().uri("/readyz")).await;
    assert_eq!(
        ready.status, 200,
        "ready again once the writer is free: {ready:?}"
    );
}

/// Every metric the shipped Grafana dashboard and alert rules name is one the service
/// exports: a renamed metric would otherwise leave a panel empty or an alert that can never
/// fire, silently.
#[actix_web::test]
async fn the_dashboard_and_the_alerts_name_only_metrics_the_service_exports() {
    let api = start().await;
    api.get("/v1/pets").await;
    // A subscription's lag is a series once the dispatcher has looked at it.
    let hook = api
        .post(
            "/v1/webhooks",
            serde_json::json!({"url": "https://hooks.example.com/petstore", "events": ["pet.created"]}),
        )
        .await;
    assert_eq!(hook.status, 201, "{hook:?}");
    petstore_http::delivery::look(&api.state).await.unwrap();
    let reply = api.send_as(None, TestRequest::get().uri("/metrics")).await;
    let mut text = reply.body.as_str().unwrap().to_owned();
    if !text.contains("petstore_db_replica_up{") || !text.contains("petstore_db_replica_lag_bytes{")
    {
        // A node without read standbys has no series of theirs, and one whose standby's lag
        // is not known yet (its probe has not measured it) has no lag series: these are what
        // a node with one exports, from the same metrics given what its store reports of
        // the standby.
        let standby = petstore_store::ServerReads {
            server: "replica-1".into(),
            reads: 1,
            up: Some(true),
            synchronous: Some(false),
            lag_bytes: Some(0),
        };
        text.push_str(&petstore_http::metrics::Metrics::new().render(
            petstore_http::metrics::Format::Prometheus,
            petstore_store::PoolState {
                connections: 1,
                idle: 1,
            },
            petstore_store::WriterStats {
                writes: 0,
                commits: 0,
                reruns: 0,
            },
            None,
            &[standby],
        ));
    }
    let deploy = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/deploy/");
    let mut named = std::collections::BTreeSet::new();
    for file in ["grafana-dashboard.json", "alerts.yml", "alerts.test.yml"] {
        let source = std::fs::read_to_string(format!("{deploy}{file}")).unwrap();
        let mut rest = source.as_str();
        while let Some(at) = rest.find("petstore_") {
            let name: String = rest[at..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            rest = &rest[at + name.len()..];
            named.insert(name);
        }
    }
    assert!(named.len() >= 10, "{named:?}");
    let on_postgres = matches!(
        api.database(),
        petstore_store::testing::TestDatabase::Postgres(_)
    );
    let missing: Vec<&String> = named
        .iter()
        // SQLite's file only: PostgreSQL's disk is the server's to watch.
        .filter(|name| !(on_postgres && *name == "petstore_db_disk_free_bytes"))
        .filter(|name| {
            let family = ["_bucket", "_count", "_sum"]
                .iter()
                .find_map(|suffix| name.strip_suffix(suffix))
                .unwrap_or(name);
            !text.lines().any(|line| {
                line.starts_with(&format!("{name} "))
                    || line.starts_with(&format!("{name}{{"))
                    || line.starts_with(&format!("# TYPE {family} "))
            })
        })
        .collect();
    // The names first, and only the families exported after them: a long message is cut.
    let families: Vec<&str> = text.lines().filter(|l| l.starts_with("# TYPE")).collect();
    assert!(
        missing.is_empty(),
        "not in /metrics: {missing:?}; the families it has: {families:#?}"
    );
}

/// The log line of the event `message` logged while the request `request_id` ran.
fn logged_line(text: &str, request_id: &str, message: &str) -> serde_json::Value {
    text.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|event| {
            event["span"]["request_id"] == request_id && event["fields"]["message"] == message
        })
        .unwrap_or_else(|| panic!("no {message:?} line for {request_id} in {text}"))
}

/// Who did what is in the log: each request's line names its key, and a key made or
/// revoked through the API names the key that did it, as the command line's lines name the
/// operator.
#[actix_web::test]
async fn request_lines_name_the_key_and_key_changes_name_who_made_them() {
    let logs = common::captured_logs();
    let api = start().await;
    let admin_id = api.get("/v1/keys").await.body[0]["id"].as_i64().unwrap();
    let created = api
        .send(
            TestRequest::post()
                .uri("/v1/keys")
                .insert_header(("x-request-id", "who-made-key"))
                .set_json(json!({"name": "Till", "role": "customer"})),
        )
        .await;
    assert_eq!(created.status, 201, "{created:?}");
    let new_id = created.body["id"].as_i64().unwrap();
    let revoked = api
        .send(
            TestRequest::delete()
                .uri(&format!("/v1/keys/{new_id}"))
                .insert_header(("x-request-id", "who-revoked-key")),
        )
        .await;
    assert_eq!(revoked.status, 204, "{revoked:?}");

    let text = logs.text();
    let handled = logged_line(&text, "who-made-key", "request handled");
    assert_eq!(handled["span"]["key_id"], admin_id, "{handled}");
    let made = logged_line(&text, "who-made-key", "key created");
    assert_eq!(made["fields"]["key_id"], new_id.to_string(), "{made}");
    assert_eq!(made["fields"]["role"], "customer", "{made}");
    assert_eq!(made["fields"]["by"], format!("key {admin_id}"), "{made}");
    let gone = logged_line(&text, "who-revoked-key", "key revoked");
    assert_eq!(gone["fields"]["key_id"], new_id.to_string(), "{gone}");
    assert_eq!(gone["fields"]["by"], format!("key {admin_id}"), "{gone}");
}

/// The version a build of this checkout carries: the package's, and the commit as git names
/// it here (`unknown` outside a checkout).
fn built_version() -> String {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map_or_else(
            || "unknown".to_owned(),
            |out| String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        );
    format!("{}+{commit}", env!("CARGO_PKG_VERSION"))
}

/// `petstore --version` names the commit the binary was built from, as the metric does.
#[test]
fn the_version_names_the_commit_built_from() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_petstore"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("petstore {}", built_version())
    );
}

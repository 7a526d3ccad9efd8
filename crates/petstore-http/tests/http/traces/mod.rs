//! Traces end to end: the binary exporting over OTLP/HTTP (protobuf) to a collector the test
//! runs, a traced change, and the webhook delivery it causes, checked span by span.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use crate::binary::{self, IncomingRequest, Server};
use crate::webhooks::Receiver;

use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use petstore_store::testing::TestDatabase;
use prost::Message as _;

mod console;

const ADMIN: &str = "traces-admin-0123456789abcdef0123456789ab";

/// A span as exported, with its ids in hex (as a `traceparent` writes them).
#[derive(Debug, Clone)]
struct Exported {
    trace_id: String,
    span_id: String,
    parent_id: String,
    name: String,
    kind: i32,
    attributes: Vec<(String, String)>,
}

impl Exported {
    fn from_proto(span: &Span) -> Self {
        let attributes = span
            .attributes
            .iter()
            .map(|pair| {
                let value = match pair.value.as_ref().and_then(|v| v.value.as_ref()) {
                    Some(AnyValue::StringValue(text)) => text.clone(),
                    Some(AnyValue::IntValue(n)) => n.to_string(),
                    Some(AnyValue::BoolValue(b)) => b.to_string(),
                    other => format!("{other:?}"),
                };
                (pair.key.clone(), value)
            })
            .collect();
        Self {
            trace_id: hex(&span.trace_id),
            span_id: hex(&span.span_id),
            parent_id: hex(&span.parent_span_id),
            name: span.name.clone(),
            kind: span.kind,
            attributes,
        }
    }

    fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An OTLP/HTTP collector: takes `POST /v1/traces` bodies (protobuf), keeps each body as it
/// came and the spans it decodes to, and answers 200 with an empty export response.
#[derive(Clone, Default)]
struct Collector {
    spans: Arc<Mutex<Vec<Exported>>>,
    bodies: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Collector {
    /// Listening on 127.0.0.1; its endpoint, for `--otlp-endpoint`.
    fn start(&self) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let collector = self.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let collector = collector.clone();
                std::thread::spawn(move || collector.serve(stream));
            }
        });
        endpoint
    }

    /// Answers requests on one kept-alive connection until the exporter closes it.
    fn serve(&self, stream: TcpStream) {
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut writer = stream;
        while let Some(request) = IncomingRequest::read(&mut reader) {
            assert!(
                request.line.starts_with("POST /v1/traces "),
                "{}",
                request.line
            );
            assert_eq!(request.header("content-type"), "application/x-protobuf");
            let body = request.body;
            let request = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
            let spans = request
                .resource_spans
                .iter()
                .flat_map(|resource| &resource.scope_spans)
                .flat_map(|scope| &scope.spans)
                .map(Exported::from_proto);
            self.spans.lock().unwrap().extend(spans);
            self.bodies.lock().unwrap().push(body);
            write!(
                writer,
                "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n"
            )
            .unwrap();
        }
    }

    /// Waits (30 s at most) for a span that `wanted` picks.
    fn span(&self, what: &str, wanted: impl Fn(&Exported) -> bool) -> Exported {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(found) = self.spans.lock().unwrap().iter().find(|s| wanted(s)) {
                return found.clone();
            }
            assert!(
                Instant::now() < deadline,
                "no {what} among {:#?}",
                self.spans.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The binary exporting to `collector`, batches leaving every 100 ms, deliveries to private
/// addresses allowed (the receiver is on 127.0.0.1).
fn start(database: &str, endpoint: &str) -> Server {
    let mut command = binary::petstore(database);
    command.env("OTEL_BSP_SCHEDULE_DELAY", "100");
    binary::serve_command(
        command,
        Some(ADMIN),
        &[
            "--otlp-endpoint",
            endpoint,
            "--webhook-allow-private-targets",
            "--webhook-poll-ms",
            "20",
        ],
    )
}

#[test]
fn a_traced_change_exports_its_request_store_and_delivery_spans_in_the_callers_trace() {
    let database = TestDatabase::new("traces");
    let collector = Collector::default();
    let endpoint = collector.start();
    let receiver = Receiver::start();
    let server = start(&database.arg(), &endpoint);

    let subscribed = server.send(
        "POST",
        "/v1/webhooks",
        ADMIN,
        &[("x-request-id", "subscribe-1")],
        Some(&format!(
            r#"{{"url": "{}", "events": ["category.created"]}}"#,
            receiver.url
        )),
    );
    assert_eq!(subscribed.map(|(status, _)| status), Some(201));

    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let created = server.send(
        "POST",
        "/v1/categories",
        ADMIN,
        &[
            ("traceparent", &format!("00-{trace_id}-{caller_span}-01")),
            ("x-request-id", "create-1"),
        ],
        Some(r#"{"name": "Dogs"}"#),
    );
    assert_eq!(created.map(|(status, _)| status), Some(201));

    // The request's span: a server span, the child of the caller's, named by its route.
    let request = collector.span("the request's span", |s| {
        s.attribute("petstore.request_id") == Some("create-1")
    });
    assert_eq!(request.trace_id, trace_id);
    assert_eq!(request.parent_id, caller_span);
    assert_ne!(request.span_id, caller_span);
    assert_eq!(request.name, "POST /v1/categories");
    assert_eq!(request.kind, SpanKind::Server as i32);
    assert_eq!(request.attribute("http.request.method"), Some("POST"));
    assert_eq!(request.attribute("http.route"), Some("/v1/categories"));
    assert_eq!(request.attribute("http.response.status_code"), Some("201"));

    // Its store call: a child of the request's span.
    let store = collector.span("the store call's span", |s| {
        s.parent_id == request.span_id && s.name.starts_with("store ")
    });
    assert_eq!(store.trace_id, trace_id);
    assert_eq!(store.name, "store write");
    assert!(store.attribute("db.system.name").is_some(), "{store:?}");

    // The delivery of the event it caused: a client span, also the request span's child, and
    // the receiver is handed the attempt's span as its parent.
    let delivery = collector.span("the delivery attempt's span", |s| {
        s.name == "webhook delivery"
    });
    assert_eq!(delivery.trace_id, trace_id);
    assert_eq!(delivery.parent_id, request.span_id);
    assert_eq!(delivery.kind, SpanKind::Client as i32);
    assert_eq!(delivery.attribute("http.response.status_code"), Some("204"));
    assert_eq!(delivery.attribute("petstore.delivery_attempt"), Some("1"));
    assert_eq!(delivery.attribute("server.address"), Some("127.0.0.1"));
    let sent = receiver.log();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(
        sent[0].traceparent,
        format!("00-{trace_id}-{}-01", delivery.span_id)
    );

    // A request without a `traceparent` starts a trace of its own.
    let subscribe = collector.span("the untraced request's span", |s| {
        s.attribute("petstore.request_id") == Some("subscribe-1")
    });
    assert_eq!(subscribe.parent_id, "", "{subscribe:?}");
    assert_ne!(subscribe.trace_id, trace_id);
    assert_eq!(subscribe.name, "POST /v1/webhooks");

    // Nothing the client sent beyond what a span names goes out: not the key, not the body.
    for body in collector.bodies.lock().unwrap().iter() {
        for secret in [ADMIN.as_bytes(), b"Dogs"] {
            assert!(
                !body.windows(secret.len()).any(|w| w == secret),
                "an export carries {:?}",
                String::from_utf8_lossy(secret)
            );
        }
    }

    // Stopping sends what is still batched, and the exporter logged no failure.
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log:#?}");
    let complaints: Vec<&String> = log
        .iter()
        .filter(|line| {
            let event: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
            let level = event["level"].as_str().unwrap_or_default();
            event["target"]
                .as_str()
                .is_some_and(|t| t.starts_with("opentelemetry") || t.ends_with("::traces"))
                && matches!(level, "WARN" | "ERROR")
        })
        .collect();
    assert!(complaints.is_empty(), "{complaints:#?}");
}

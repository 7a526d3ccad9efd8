//! Traces over OTLP (`--otlp-endpoint`): one span per request, a child span for the store
//! call it makes and, for each webhook delivery attempt of the events it caused, a span that
//! continues its trace; all joined to the caller's `traceparent`.
//!
//! Off by default, and off means nothing is made: the request middleware, the store call and
//! the delivery loop each ask [`crate::state::AppState::traces`] first, and without it take
//! the path they took before traces existed (`docs/operations.md`, "Traces").
//!
//! What a span records is chosen, never copied from the request: the method, the route's
//! pattern, the status and the request id; for a delivery, the subscription, the event, the
//! attempt and the receiver's host. No header, query string or body goes out, so neither a key
//! nor a webhook URL's token can.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, ContextGuard, KeyValue};
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use petstore_core::{AttemptReport, PendingDelivery, TraceParent};

/// How long one export may take, connection and answer included.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The spans' maker, and the exporter behind it; cheap to clone.
#[derive(Debug, Clone)]
pub struct Traces {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
}

impl Traces {
    /// Starts exporting to the OTLP/HTTP collector at `endpoint` (`http://127.0.0.1:4318`; the
    /// signal's path, `/v1/traces`, is added as `OTEL_EXPORTER_OTLP_ENDPOINT` would). Spans
    /// leave in batches from the SDK's own thread, so a slow collector never holds a request;
    /// the SDK's `OTEL_BSP_*` variables tune the batches.
    pub fn start(endpoint: &str) -> Result<Self, String> {
        let endpoint = format!("{}/v1/traces", endpoint.trim_end_matches('/'));
        let exporter = SpanExporter::builder()
            .with_http()
            .with_http_client(OtlpClient::new())
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(endpoint)
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| e.to_string())?;
        let resource = Resource::builder()
            .with_service_name("petstore")
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("petstore");
        Ok(Self { provider, tracer })
    }

    /// Sends what is still batched and stops the exporter (on the way out of `serve`).
    pub fn finish(&self) {
        if let Err(error) = self.provider.shutdown() {
            tracing::warn!(%error, "could not send the last traces");
        }
    }

    /// The span of one request, a child of the caller's `traceparent` if it sent one (whose
    /// sampled flag it then follows), else the root of a new trace.
    pub(crate) fn request(
        &self,
        method: &'static str,
        caller: Option<&TraceParent>,
        request_id: &str,
    ) -> RequestSpan {
        let parent = caller.map_or_else(Context::new, remote_parent);
        let span = self
            .tracer
            .span_builder(method)
            .with_kind(SpanKind::Server)
            .with_attributes([
                KeyValue::new("http.request.method", method),
                KeyValue::new("petstore.request_id", request_id.to_owned()),
            ])
            .start_with_context(&self.tracer, &parent);
        RequestSpan {
            context: parent.with_span(span),
            method,
        }
    }

    /// A child of the current span (the request's, while its future runs) for a call to the
    /// store; `None` outside any span (the delivery loop's bookkeeping).
    pub(crate) fn store_call(&self, call: &'static str, system: &'static str) -> Option<ChildSpan> {
        let parent = Context::current();
        if !parent.has_active_span() {
            return None;
        }
        let span = self
            .tracer
            .span_builder(call)
            .with_kind(SpanKind::Internal)
            .with_attributes([KeyValue::new("db.system.name", system)])
            .start_with_context(&self.tracer, &parent);
        Some(ChildSpan(parent.with_span(span)))
    }

    /// The span of one delivery attempt: a child of the span the event was caused under (its
    /// recorded `traceparent`), else the root of a new trace.
    pub(crate) fn delivery_attempt(&self, pending: &PendingDelivery) -> ChildSpan {
        let parent = pending
            .event
            .traceparent
            .as_ref()
            .map_or_else(Context::new, remote_parent);
        let span = self
            .tracer
            .span_builder("webhook delivery")
            .with_kind(SpanKind::Client)
            .with_attributes([
                KeyValue::new("http.request.method", "POST"),
                KeyValue::new("server.address", pending.url.host().to_owned()),
                KeyValue::new("petstore.webhook_id", pending.webhook_id.to_string()),
                KeyValue::new("petstore.event_id", pending.event.id.to_string()),
                KeyValue::new("petstore.delivery_attempt", i64::from(pending.attempt)),
            ])
            .start_with_context(&self.tracer, &parent);
        ChildSpan(parent.with_span(span))
    }
}

/// A request's span, open while the request runs.
#[derive(Debug)]
pub(crate) struct RequestSpan {
    context: Context,
    method: &'static str,
}

impl RequestSpan {
    /// Makes this span the current one until the guard is dropped (while the request's
    /// future is polled), so that its store call finds its parent.
    pub(crate) fn make_current(&self) -> ContextGuard {
        self.context.clone().attach()
    }

    /// This span as a `traceparent`: what the request's events record, so that their
    /// deliveries are its children.
    pub(crate) fn traceparent(&self) -> Option<TraceParent> {
        traceparent_of(&self.context)
    }

    /// Names the span after its route (`GET /v1/pets/{petId}`, the pattern: a name is not an
    /// id), records the status, and ends it. A server span is an error only when the server
    /// failed (5xx); a client's mistake is the client's.
    pub(crate) fn finish(self, route: &str, status: u16) {
        let span = self.context.span();
        span.update_name(format!("{} {route}", self.method));
        span.set_attribute(KeyValue::new("http.route", route.to_owned()));
        span.set_attribute(KeyValue::new(
            "http.response.status_code",
            i64::from(status),
        ));
        if status >= 500 {
            span.set_status(Status::error(""));
        }
        span.end();
    }
}

/// A store call's or a delivery attempt's span, open until it finishes.
#[derive(Debug)]
pub(crate) struct ChildSpan(Context);

impl ChildSpan {
    /// This span as a `traceparent` (sent with a delivery, so that the receiver's work is its
    /// child).
    pub(crate) fn traceparent(&self) -> Option<TraceParent> {
        traceparent_of(&self.0)
    }

    /// Ends a store call's span, marked failed if the call failed on the server's side.
    pub(crate) fn finish(self, failed: bool) {
        let span = self.0.span();
        if failed {
            span.set_status(Status::error(""));
        }
        span.end();
    }

    /// Ends a delivery attempt's span with what the receiver answered.
    pub(crate) fn finish_attempt(self, report: &AttemptReport) {
        let span = self.0.span();
        if let Some(status) = report.status_code {
            span.set_attribute(KeyValue::new(
                "http.response.status_code",
                i64::from(status),
            ));
        }
        if report.outcome() == petstore_core::DeliveryOutcome::Failed {
            let reason = report.error.clone().unwrap_or_default();
            span.set_status(Status::error(reason));
        }
        span.end();
    }
}

/// The context of a caller's span, as the W3C Trace Context propagator reads it.
fn remote_parent(caller: &TraceParent) -> Context {
    let carrier = HashMap::from([("traceparent".to_owned(), caller.as_str().to_owned())]);
    TraceContextPropagator::new().extract(&carrier)
}

/// The span of `context` as a `traceparent`, written by the same propagator.
fn traceparent_of(context: &Context) -> Option<TraceParent> {
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(context, &mut carrier);
    carrier
        .get("traceparent")
        .and_then(|value| TraceParent::parse(value))
}

/// The exporter's HTTP client: ureq, blocking, on the SDK's batch thread (which runs the
/// exporter's future to completion itself, with no async runtime to hand work to). TLS by
/// rustls on ring with the system's trusted roots, as webhook deliveries.
#[derive(Debug)]
struct OtlpClient(ureq::Agent);

impl OtlpClient {
    fn new() -> Self {
        // ureq asks rustls for the process's provider; another part of the process may have
        // installed the same one already, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let roots: Vec<ureq::tls::Certificate<'static>> = rustls_native_certs::load_native_certs()
            .certs
            .iter()
            .map(|der| ureq::tls::Certificate::from_der(der).to_owned())
            .collect();
        let tls = ureq::tls::TlsConfig::builder()
            .provider(ureq::tls::TlsProvider::Rustls)
            .root_certs(ureq::tls::RootCerts::Specific(Arc::new(roots)))
            .build();
        let agent = ureq::Agent::config_builder()
            .tls_config(tls)
            .timeout_global(Some(EXPORT_TIMEOUT))
            // The exporter reads the status itself (and retries what it may).
            .http_status_as_error(false)
            .build()
            .new_agent();
        Self(agent)
    }
}

#[async_trait]
impl HttpClient for OtlpClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (head, body) = request.into_parts();
        let response = self.0.run(Request::from_parts(head, body.to_vec()))?;
        let (head, mut body) = response.into_parts();
        // A collector's answer is small (a partial-success note at most).
        let body = body.with_config().limit(1024 * 1024).read_to_vec()?;
        Ok(Response::from_parts(head, Bytes::from(body)))
    }
}

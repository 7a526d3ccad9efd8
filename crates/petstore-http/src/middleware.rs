//! What wraps every request: its id and log line, a panic guard, and a last pass that turns
//! any error response not already in the contract's JSON shape into one.

use std::hash::{BuildHasher, RandomState};
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use actix_http::HttpMessage as _;
use actix_http::encoding::Encoder;
use actix_web::body::{self, BodySize, BoxBody, EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::http::header::{
    self, AcceptEncoding, ContentEncoding, Encoding, HeaderName, HeaderValue,
};
use actix_web::middleware::Next;
use actix_web::{Error, HttpRequest, ResponseError, web};
use futures_util::FutureExt as _;
use tracing::Instrument;

use crate::error::ApiError;
use crate::metrics::RouteMetrics;
use crate::state::AppState;
use crate::traces::RequestSpan;
use petstore_core::{RequestId, TraceParent};

/// `X-Request-Id`.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// A client's request id is echoed when it is 1 to 128 characters of a safe set; anything
/// else (control characters, very long values) is replaced, so logs stay clean.
fn sane_request_id(value: &HeaderValue) -> bool {
    RequestId::is_valid(value.as_bytes())
}

/// 16 hex digits, unpredictable and unique per call.
fn new_request_id() -> HeaderValue {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    // RandomState is seeded from the OS once per thread: unpredictable, unique per call.
    let n = RandomState::new().hash_one(SEQUENCE.fetch_add(1, Ordering::Relaxed));
    let mut hex = [0u8; 16];
    for (i, digit) in hex.iter_mut().enumerate() {
        *digit = b"0123456789abcdef"[((n >> (60 - 4 * i)) & 0xf) as usize];
    }
    HeaderValue::from_bytes(&hex).unwrap_or_else(|_| HeaderValue::from_static("0"))
}

/// The route a resource serves, as metric label and log field: its pattern
/// (`/v1/pets/{petId}`), set on each resource when the app is built, so that a request does
/// not rebuild it by matching its path against the routes again; and the metric handles its
/// requests have used.
#[derive(Debug, Clone)]
pub struct RouteLabel {
    /// The pattern.
    pub route: Arc<str>,
    /// The route's metric handles; none for a label made for one request.
    pub metrics: Option<Arc<RouteMetrics>>,
}

impl RouteLabel {
    /// The label of a resource's route, kept with the resource.
    pub fn of_resource(route: impl Into<Arc<str>>) -> Self {
        Self {
            route: route.into(),
            metrics: Some(Arc::default()),
        }
    }

    /// A label made for one request (a route outside `/v1`, or none matched).
    fn for_one_request(route: &str) -> Self {
        Self {
            route: Arc::from(route),
            metrics: None,
        }
    }
}

/// What wraps every request, in one layer (one boxed future, one span):
///
/// - gives it an id (echoed in `X-Request-Id`), runs it in a tracing span carrying that id,
///   and logs and counts its outcome;
/// - answers `HEAD` for every `GET` route (RFC 9110): the request is routed as a `GET`, and
///   the HTTP/1 codec, which remembers the request was a `HEAD`, sends the headers without
///   the body. A streamed body (the event stream) is dropped here, since it would never end;
/// - turns a panic anywhere below into a 500 `internal` answer (the panic's text goes to the
///   log only), instead of a dropped connection;
/// - replaces an error response that is not JSON (from actix itself, or any path this crate
///   forgot) by the JSON body its status stands for ([`json_error`]);
/// - compresses a large answer ([`COMPRESS_FROM_BYTES`]).
pub async fn around_every_request(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let id = req
        .headers()
        .get(REQUEST_ID)
        .filter(|value| sane_request_id(value))
        .cloned()
        .unwrap_or_else(new_request_id);
    // A method is any token a client likes: labels and log fields take it only from a fixed
    // set, so a client cannot grow the metrics or the logs with made-up ones.
    let method = method_label(req.method());
    let head = req.method() == Method::HEAD;
    if head {
        req.head_mut().method = Method::GET;
    }
    let span = tracing::info_span!(
        "request",
        request_id = id.to_str().unwrap_or_default(),
        method = method,
        route = tracing::field::Empty,
        trace_id = tracing::field::Empty,
        key_id = tracing::field::Empty,
    );
    let caller = req
        .headers()
        .get(TRACEPARENT)
        .and_then(|value| value.to_str().ok())
        .and_then(TraceParent::parse);
    let state = req.app_data::<web::Data<AppState>>().cloned();
    // Boxed: the request's future, which actix boxes for every request, carries one pointer
    // for it, traced or not (docs/performance.md, "Traces").
    let exported = state
        .as_ref()
        .and_then(|state| state.traces())
        .map(|traces| {
            Box::new(traces.request(method, caller.as_ref(), id.to_str().unwrap_or_default()))
        });
    // The request's events record the span they were caused under: this request's own when
    // traces are exported, else the caller's, passed on as it came.
    let cause = match &exported {
        Some(exported) => exported.traceparent(),
        None => caller,
    };
    if let Some(trace) = cause {
        span.record("trace_id", trace.trace_id());
        req.extensions_mut().insert(trace);
    }
    // What the request's changes record of it (`context::Origin`).
    if let Some(request_id) = id.to_str().ok().and_then(RequestId::parse) {
        req.extensions_mut().insert(request_id);
    }
    let _in_flight = state
        .as_ref()
        .map(|state| state.metrics().request_started());
    let started = Instant::now();
    // No clone of the request may be held across `next.call`: the router needs it unshared.
    let mut call = pin!(next.call(req).instrument(span.clone()));
    // The request's span is current while its future runs, so that the store call finds its
    // parent; only a traced request pays for that, at each poll.
    let traced = exported.as_deref();
    let call = std::future::poll_fn(|cx| {
        let _current = traced.map(RequestSpan::make_current);
        call.as_mut().poll(cx)
    });
    let result = match AssertUnwindSafe(call).catch_unwind().await {
        Ok(Ok(response))
            if response.status().is_client_error() || response.status().is_server_error() =>
        {
            Ok(json_error(response))
        }
        Ok(Ok(response)) => Ok(response.map_into_left_body()),
        Ok(Err(error)) => Err(error),
        Err(panic) => {
            let text = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            span.in_scope(|| tracing::error!(panic = %text, "a request handler panicked"));
            Err(ApiError::internal().into())
        }
    };
    let (status, label) = match &result {
        Ok(response) => (response.status(), route_label(response.request())),
        Err(error) => (error.as_response_error().status_code(), None),
    };
    let label = label.unwrap_or_else(|| RouteLabel::for_one_request("unmatched"));
    let seconds = started.elapsed().as_secs_f64();
    span.record("route", &*label.route);
    if let Some(exported) = exported {
        exported.finish(&label.route, status.as_u16());
    }
    span.in_scope(|| {
        tracing::info!(
            status = status.as_u16(),
            latency_ms = seconds * 1000.0,
            "request handled"
        );
    });
    if let Some(state) = &state {
        state.metrics().request_finished(
            method,
            &label.route,
            label.metrics.as_deref(),
            status.as_u16(),
            seconds,
        );
    }
    match result {
        Ok(mut response) => {
            response.headers_mut().insert(REQUEST_ID, id);
            if head && matches!(response.response().body().size(), BodySize::Stream) {
                let response =
                    response.map_body(|_, _| EitherBody::right(BoxBody::new(body::None::new())));
                return Ok(compress(response));
            }
            Ok(compress(response))
        }
        // actix answers an error with its `error_response`: make it ours, with the id.
        Err(error) => {
            let api = error
                .as_error::<ApiError>()
                .cloned()
                .unwrap_or_else(|| ApiError::for_status(status));
            Err(api.with_header(REQUEST_ID, id).into())
        }
    }
}

/// The pattern of the route that answered: the label its resource carries, else (routes
/// outside `/v1`) the one actix finds again, else `None` (no route matched).
fn route_label(req: &HttpRequest) -> Option<RouteLabel> {
    if let Some(label) = req.app_data::<RouteLabel>() {
        return Some(label.clone());
    }
    req.match_pattern()
        .map(|pattern| RouteLabel::for_one_request(&pattern))
}

/// The method as a metric label or log field: one of HTTP's standard methods, or `other`.
pub fn method_label(method: &Method) -> &'static str {
    static STANDARD: [Method; 9] = [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::PATCH,
        Method::OPTIONS,
        Method::CONNECT,
        Method::TRACE,
    ];
    STANDARD
        .iter()
        .find(|standard| *standard == method)
        .map_or("other", Method::as_str)
}

/// The last line of the error contract: an error response that is not JSON (from actix
/// itself, or any path this crate forgot) is replaced by the JSON body its status stands for.
fn json_error<B>(response: ServiceResponse<B>) -> ServiceResponse<EitherBody<B>> {
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let is_json = content_type.is_some_and(|v| v.starts_with("application/json"));
    // The console answers a browser: its refusals are pages that say what the API said.
    let is_console_page = content_type.is_some_and(|v| v.starts_with("text/html"))
        && response.request().path().starts_with(crate::console::BASE);
    if is_json || is_console_page {
        return response.map_into_left_body();
    }
    let (request, original) = response.into_parts();
    let mut replacement = ApiError::for_status(original.status()).error_response();
    for name in [header::ALLOW, header::RETRY_AFTER] {
        if let Some(value) = original.headers().get(&name) {
            replacement.headers_mut().insert(name, value.clone());
        }
    }
    ServiceResponse::new(request, replacement).map_into_right_body()
}

/// The W3C Trace Context header a caller's tracing sends.
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");

/// Responses smaller than this go out as they are. Setting up an encoder costs about as much
/// as a whole list request of the service (br, gzip or zstd: 0.5 to 0.9 million instructions
/// for a 2.6 KB page of 20 pets, against 0.2 million for the request itself; bench/profile),
/// so only answers large enough that the bytes saved matter more than that CPU are compressed:
/// the API document, the docs' files, long event pages (`docs/performance.md`).
pub const COMPRESS_FROM_BYTES: u64 = 16 * 1024;

/// The encodings offered, the client's preference (q-values) deciding among them.
static ENCODINGS: &[Encoding] = &[
    Encoding::identity(),
    Encoding::brotli(),
    Encoding::zstd(),
    Encoding::gzip(),
];

/// Compresses a response of at least [`COMPRESS_FROM_BYTES`] whose body is whole (so never the
/// event stream), with the best encoding the client's `Accept-Encoding` accepts. Unlike
/// actix's `Compress`, an `Accept-Encoding` that accepts nothing offered gets the plain body,
/// not a 406. The header is read only for a response that may be compressed: a small answer
/// pays nothing for it.
fn compress<B: MessageBody>(response: ServiceResponse<B>) -> ServiceResponse<Encoder<B>> {
    let large = matches!(
        response.response().body().size(),
        BodySize::Sized(n) if n >= COMPRESS_FROM_BYTES
    );
    let chosen = if large {
        response
            .request()
            .get_header::<AcceptEncoding>()
            .and_then(|accept| accept.negotiate(ENCODINGS.iter()))
            .and_then(|encoding| match encoding {
                Encoding::Known(known) => Some(known),
                Encoding::Unknown(_) => None,
            })
            .unwrap_or(ContentEncoding::Identity)
    } else {
        ContentEncoding::Identity
    };
    response.map_body(move |head, body| {
        if large {
            head.headers_mut()
                .append(header::VARY, HeaderValue::from_static("accept-encoding"));
        }
        Encoder::response(chosen, head, body)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_echoed_only_when_sane() {
        assert!(sane_request_id(&HeaderValue::from_static(
            "abc-123_DEF.4:5"
        )));
        assert!(sane_request_id(
            &HeaderValue::from_str(&"x".repeat(128)).unwrap()
        ));
        for bad in ["", "has space", "semi;colon", &"x".repeat(129)] {
            let value = HeaderValue::from_str(bad).unwrap();
            assert!(!sane_request_id(&value), "{bad:?}");
        }
    }

    #[test]
    fn new_request_ids_differ() {
        let (one, two) = (new_request_id(), new_request_id());
        assert_ne!(one, two);
        for id in [one, two] {
            assert_eq!(id.len(), 16);
            assert!(id.as_bytes().iter().all(u8::is_ascii_hexdigit), "{id:?}");
        }
    }
}

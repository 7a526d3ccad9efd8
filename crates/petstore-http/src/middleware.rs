//! What wraps every request: its id and log line, a panic guard, and a last pass that turns
//! any error response not already in the contract's JSON shape into one.

use std::hash::{BuildHasher, RandomState};
use std::panic::AssertUnwindSafe;
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
use actix_web::middleware::{ErrorHandlerResponse, Next};
use actix_web::{Error, ResponseError, web};
use futures_util::FutureExt;
use tracing::Instrument;

use crate::error::ApiError;
use crate::state::AppState;
use petstore_core::TraceParent;

/// `X-Request-Id`.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// A client's request id is echoed when it is 1 to 128 characters of a safe set; anything
/// else (control characters, very long values) is replaced, so logs stay clean.
fn sane_request_id(value: &HeaderValue) -> Option<String> {
    let text = value.to_str().ok()?;
    let ok = (1..=128).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:+/=".contains(&b));
    ok.then(|| text.to_owned())
}

fn new_request_id() -> String {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    // RandomState is seeded from the OS once per thread: unpredictable, unique per call.
    let n = SEQUENCE.fetch_add(1, Ordering::Relaxed);
    format!("{:016x}", RandomState::new().hash_one(n))
}

/// Gives each request an id (echoed in `X-Request-Id`), runs it in a tracing span carrying that
/// id, and logs its outcome.
///
/// It also answers `HEAD` for every `GET` route (RFC 9110): the request is routed as a `GET`,
/// and the HTTP/1 codec, which remembers the request was a `HEAD`, sends the headers without
/// the body. A streamed body (the event stream) is dropped here, since it would never end.
pub async fn request_context(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, Error> {
    let id = req
        .headers()
        .get(REQUEST_ID)
        .and_then(sane_request_id)
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
        request_id = %id,
        method = method,
        route = tracing::field::Empty,
        trace_id = tracing::field::Empty,
    );
    if let Some(trace) = req
        .headers()
        .get(TRACEPARENT)
        .and_then(|value| value.to_str().ok())
        .and_then(TraceParent::parse)
    {
        span.record("trace_id", trace.trace_id());
        req.extensions_mut().insert(trace);
    }
    let state = req.app_data::<web::Data<AppState>>().cloned();
    let _in_flight = state
        .as_ref()
        .map(|state| state.metrics().request_started());
    let started = Instant::now();
    let header_value = HeaderValue::from_str(&id).ok();
    // No clone of the request may be held across `next.call`: the router needs it unshared.
    let result = next.call(req).instrument(span.clone()).await;
    let (status, route) = match &result {
        Ok(response) => (
            response.status(),
            // The pattern, not the path: fuzzed paths must not make new series or log fields.
            response
                .request()
                .match_pattern()
                .unwrap_or_else(|| "unmatched".to_owned()),
        ),
        Err(error) => (
            error.as_response_error().status_code(),
            "unmatched".to_owned(),
        ),
    };
    let seconds = started.elapsed().as_secs_f64();
    span.record("route", route.as_str());
    span.in_scope(|| {
        tracing::info!(
            status = status.as_u16(),
            latency_ms = seconds * 1000.0,
            "request handled"
        );
    });
    if let Some(state) = &state {
        state
            .metrics()
            .request_finished(method, &route, status.as_u16(), seconds);
    }
    match result {
        Ok(mut response) => {
            if let Some(value) = header_value {
                response.headers_mut().insert(REQUEST_ID, value);
            }
            if head && matches!(response.response().body().size(), BodySize::Stream) {
                return Ok(
                    response.map_body(|_, _| EitherBody::right(BoxBody::new(body::None::new())))
                );
            }
            Ok(response.map_into_left_body())
        }
        // actix answers an error with its `error_response`: make it ours, with the id.
        Err(error) => {
            let mut api = error
                .as_error::<ApiError>()
                .cloned()
                .unwrap_or_else(|| ApiError::for_status(status));
            if let Some(value) = header_value {
                api = api.with_header(REQUEST_ID, value);
            }
            Err(api.into())
        }
    }
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

/// Turns a panic anywhere below into a 500 `internal` answer (the panic's text goes to the log
/// only), instead of a dropped connection.
pub async fn catch_panics(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    match AssertUnwindSafe(next.call(req)).catch_unwind().await {
        Ok(result) => result,
        Err(panic) => {
            let text = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!(panic = %text, "a request handler panicked");
            Err(ApiError::internal().into())
        }
    }
}

/// The last line of the error contract: an error response that is not JSON (from actix
/// itself, or any path this crate forgot) is replaced by the JSON body its status stands for.
pub fn json_errors<B: MessageBody + 'static>(
    response: ServiceResponse<B>,
) -> actix_web::Result<ErrorHandlerResponse<B>> {
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_json {
        return Ok(ErrorHandlerResponse::Response(
            response.map_into_left_body(),
        ));
    }
    let (request, original) = response.into_parts();
    let mut replacement = ApiError::for_status(original.status()).error_response();
    for name in [header::ALLOW, header::RETRY_AFTER] {
        if let Some(value) = original.headers().get(&name) {
            replacement.headers_mut().insert(name, value.clone());
        }
    }
    let response: ServiceResponse<EitherBody<B>> =
        ServiceResponse::new(request, replacement).map_into_right_body();
    Ok(ErrorHandlerResponse::Response(response))
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
pub async fn compress(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let response = next.call(req).await?;
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
    Ok(response.map_body(move |head, body| {
        if large {
            head.headers_mut()
                .append(header::VARY, HeaderValue::from_static("accept-encoding"));
        }
        Encoder::response(chosen, head, body)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_echoed_only_when_sane() {
        let ok = HeaderValue::from_static("abc-123_DEF.4:5");
        assert_eq!(sane_request_id(&ok).as_deref(), Some("abc-123_DEF.4:5"));
        for bad in ["", "has space", "semi;colon", &"x".repeat(129)] {
            let value = HeaderValue::from_str(bad).unwrap();
            assert_eq!(sane_request_id(&value), None, "{bad:?}");
        }
    }

    #[test]
    fn new_request_ids_differ() {
        assert_ne!(new_request_id(), new_request_id());
    }
}

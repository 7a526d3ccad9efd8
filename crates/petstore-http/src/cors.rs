//! Cross-origin requests from browsers (CORS): which web pages, by origin, may call the API.
//!
//! Off unless origins are configured (`--cors-origin`). For an allowed origin, a preflight
//! (`OPTIONS` with `Access-Control-Request-Method`) is answered here, 204, before
//! authentication and the rate limit: it carries no key, and a browser sends one before each
//! call it cannot send plainly, so counting it as a call would halve a page's allowance. Every
//! other answer to that origin says it may be read, and which of its headers a page may see.
//! An origin not in the list gets no CORS header at all: its page cannot read any answer.
//! Keys travel in `Authorization`, never in cookies, so credentials are never allowed.

use std::sync::Arc;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::http::header::{self, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{Error, HttpResponse, web};

use crate::error::ApiError;

/// The methods the API serves.
const METHODS: &str = "GET, HEAD, POST, PUT, PATCH, DELETE";
/// The request headers a page may send beyond the always-allowed ones.
const REQUEST_HEADERS: &str = "Authorization, Content-Type, If-Match, If-None-Match, Idempotency-Key, traceparent, X-Request-Id";
/// The response headers a page may read beyond the always-visible ones.
const EXPOSED_HEADERS: &str = "ETag, Location, Link, RateLimit, RateLimit-Policy, Retry-After, X-Request-Id, Deprecation, Sunset";
/// How long a browser may keep a preflight's answer, in seconds.
const MAX_AGE: &str = "600";

/// The origins allowed to call the API from a browser; empty: CORS is off.
#[derive(Debug, Clone, Default)]
pub struct CorsOrigins(Arc<[String]>);

impl CorsOrigins {
    /// The policy for these origins, each `scheme://host[:port]` as browsers send it in
    /// `Origin`, or a description of the first that is not one.
    pub fn new(origins: &[String]) -> Result<Self, String> {
        let mut allowed = Vec::with_capacity(origins.len());
        for origin in origins {
            allowed.push(parse_origin(origin)?);
        }
        Ok(Self(allowed.into()))
    }

    /// Whether any origin is allowed.
    pub fn is_on(&self) -> bool {
        !self.0.is_empty()
    }

    fn allows(&self, origin: &HeaderValue) -> bool {
        origin
            .to_str()
            .is_ok_and(|origin| self.0.iter().any(|allowed| allowed == origin))
    }
}

/// An origin as a browser writes it: lower-case scheme and host, a port only if it is not
/// the scheme's default, no path.
pub(crate) fn parse_origin(text: &str) -> Result<String, String> {
    let refuse =
        || format!("{text:?} is not an origin: give scheme://host or scheme://host:port, no path");
    let (scheme, rest) = text.split_once("://").ok_or_else(refuse)?;
    let scheme = scheme.to_ascii_lowercase();
    if !matches!(scheme.as_str(), "http" | "https")
        || rest.is_empty()
        || rest.contains(['/', '?', '#', '@', ' '])
    {
        return Err(refuse());
    }
    let rest = rest.to_ascii_lowercase();
    let default_port = if scheme == "http" { ":80" } else { ":443" };
    let host = rest.strip_suffix(default_port).unwrap_or(&rest);
    Ok(format!("{scheme}://{host}"))
}

/// Answers an allowed origin's preflights, and marks every answer to it readable.
pub async fn cross_origin(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let policy = req
        .app_data::<web::Data<CorsOrigins>>()
        .map(|data| data.get_ref().clone())
        .unwrap_or_default();
    if !policy.is_on() {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    }
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .filter(|origin| policy.allows(origin))
        .cloned();
    let preflight = req.method() == Method::OPTIONS
        && req
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    if let (Some(origin), true) = (&origin, preflight) {
        let answer = HttpResponse::NoContent()
            .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone()))
            .insert_header((header::ACCESS_CONTROL_ALLOW_METHODS, METHODS))
            .insert_header((header::ACCESS_CONTROL_ALLOW_HEADERS, REQUEST_HEADERS))
            .insert_header((header::ACCESS_CONTROL_MAX_AGE, MAX_AGE))
            .insert_header((
                header::VARY,
                "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
            ))
            .finish();
        return Ok(req.into_response(answer));
    }
    // An answer differs by origin once any is allowed: caches must keep them apart.
    let vary = (header::VARY, HeaderValue::from_static("Origin"));
    let readable = origin.map(|origin| {
        [
            (header::ACCESS_CONTROL_ALLOW_ORIGIN, origin),
            (
                header::ACCESS_CONTROL_EXPOSE_HEADERS,
                HeaderValue::from_static(EXPOSED_HEADERS),
            ),
        ]
    });
    match next.call(req).await {
        Ok(response) => {
            let mut response = response.map_into_boxed_body();
            let headers = response.headers_mut();
            headers.append(vary.0, vary.1);
            for (name, value) in readable.into_iter().flatten() {
                headers.insert(name, value);
            }
            Ok(response)
        }
        // An error becomes its response further out (`around_every_request`): its headers
        // go with it, so that a page can read why it was refused.
        Err(error) => {
            let status = error.as_response_error().status_code();
            let api = error
                .as_error::<ApiError>()
                .cloned()
                .unwrap_or_else(|| ApiError::for_status(status));
            let api = readable
                .into_iter()
                .flatten()
                .chain([vary])
                .fold(api, |api, (name, value)| api.with_header(name, value));
            Err(api.into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_kept_as_browsers_send_them() {
        let ok = |text: &str| parse_origin(text).unwrap();
        assert_eq!(ok("https://Shop.Example.com"), "https://shop.example.com");
        assert_eq!(
            ok("https://shop.example.com:443"),
            "https://shop.example.com"
        );
        assert_eq!(ok("http://localhost:8080"), "http://localhost:8080");
        assert_eq!(ok("http://127.0.0.1:80"), "http://127.0.0.1");
        for bad in [
            "shop.example.com",
            "https://shop.example.com/",
            "https://shop.example.com/app",
            "ftp://shop.example.com",
            "https://",
            "https://user@shop.example.com",
            "*",
        ] {
            assert!(parse_origin(bad).is_err(), "{bad}");
        }
    }
}

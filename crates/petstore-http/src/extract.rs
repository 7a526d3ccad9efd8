//! Extractors that turn a request into domain values, or into the contract's JSON errors.
//!
//! actix's own `Json`, `Path` and `Query` answer bad input in plain text and without the
//! field's name; these say which field is wrong, with the right code.

use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;

use actix_web::dev::Payload;
use actix_web::error::PayloadError;
use actix_web::http::header;
use actix_web::{FromRequest, HttpRequest, web};
use petstore_core::ValidationError;
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::field_errors::field_errors;

/// The largest request body accepted, in bytes.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit(pub usize);

/// How long a client may take to send a request's body, once its headers are in: a body that
/// stalls would otherwise hold its connection for ever.
#[derive(Debug, Clone, Copy)]
pub struct BodyDeadline(pub std::time::Duration);

/// A JSON request body, parsed and validated into `T`.
///
/// - a content type other than `application/json` (parameters allowed): 415;
/// - a body over the [`BodyLimit`]: 413;
/// - a body not sent whole within the [`BodyDeadline`]: 408 `request_timeout`;
/// - not JSON, not a JSON object (serde would read an array as a struct's fields in order), or
///   a JSON type where another is expected: 400 `invalid_json`;
/// - a missing, unknown or invalid field: 400 `validation_failed`, naming the field.
///
/// Where fields are at fault (the last two), `errors` lists every bad field, not just the
/// first (see the `field_errors` module).
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

fn is_json(req: &HttpRequest) -> bool {
    let Some(value) = req.headers().get(header::CONTENT_TYPE) else {
        return false;
    };
    let Ok(text) = value.to_str() else {
        return false;
    };
    let essence = text.split(';').next().unwrap_or_default().trim();
    essence.eq_ignore_ascii_case("application/json")
}

/// The body's `Content-Encoding`, if it has one, as text.
fn content_encoding(req: &HttpRequest) -> Option<String> {
    let value = req.headers().get(header::CONTENT_ENCODING)?;
    Some(String::from_utf8_lossy(value.as_bytes()).trim().to_owned())
}

/// Whether actix decodes `encoding` (gzip, deflate, br, zstd, identity). It reads a body in
/// any other as if it had none: one the client meant to be decoded would be taken as it is.
fn is_decodable(encoding: &str) -> bool {
    encoding.parse::<header::ContentEncoding>().is_ok()
}

/// Why the body could not be read, in words a client can act on: never the decoder's own,
/// which are Rust debug text.
fn unreadable_body(encoding: Option<&str>, error: &PayloadError) -> ApiError {
    match (error, encoding) {
        (
            PayloadError::Incomplete(_) | PayloadError::EncodingCorrupted | PayloadError::Io(_),
            Some(encoding),
        ) => ApiError::invalid_json(format!(
            "the body does not decode as its Content-Encoding ({encoding}) says"
        )),
        (PayloadError::Incomplete(_), None) => {
            ApiError::invalid_json("the body ended before all of it was sent")
        }
        _ => ApiError::invalid_json("the body could not be read"),
    }
}

/// Sorts a serde_json failure into the contract's two codes, naming the field.
fn body_error(error: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let path = error.path().to_string();
    let inner = error.into_inner();
    // serde_json appends " at line L column C"; the field path says more.
    let full = inner.to_string();
    let message = full
        .rsplit_once(" at line ")
        .map_or(full.as_str(), |(head, _)| head);
    let located = if matches!(path.as_str(), "." | "?" | "") {
        message.to_owned()
    } else {
        format!("{path}: {message}")
    };
    match inner.classify() {
        serde_json::error::Category::Data if !message.starts_with("invalid type") => {
            ApiError::validation(located)
        }
        // serde_json's words for a syntax error ("expected ident") are its parser's; the
        // position is what a client can act on.
        serde_json::error::Category::Syntax => ApiError::invalid_json(format!(
            "the body is not valid JSON (line {}, column {})",
            inner.line(),
            inner.column()
        )),
        serde_json::error::Category::Eof => {
            ApiError::invalid_json("the body ends before its JSON object does")
        }
        _ => ApiError::invalid_json(located),
    }
}

impl<T: DeserializeOwned + 'static> FromRequest for JsonBody<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let json = is_json(req);
        let encoding = content_encoding(req);
        let limit = req
            .app_data::<BodyLimit>()
            .copied()
            .unwrap_or(BodyLimit(16 * 1024));
        let deadline = req
            .app_data::<BodyDeadline>()
            .copied()
            .unwrap_or(BodyDeadline(std::time::Duration::from_secs(10)));
        let body = web::Bytes::from_request(req, payload);
        Box::pin(async move {
            if !json {
                return Err(ApiError::unsupported_media_type());
            }
            if let Some(encoding) = encoding.as_deref().filter(|e| !is_decodable(e)) {
                return Err(ApiError::unsupported_encoding(encoding));
            }
            let bytes = actix_web::rt::time::timeout(deadline.0, body)
                .await
                .map_err(|_| ApiError::request_timeout(deadline.0))?
                .map_err(|error| match error.as_error::<PayloadError>() {
                    Some(PayloadError::Overflow) => ApiError::payload_too_large(limit.0),
                    Some(payload) => unreadable_body(encoding.as_deref(), payload),
                    None => ApiError::invalid_json("the body could not be read"),
                })?;
            let starts_an_object = bytes
                .iter()
                .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
                == Some(&b'{');
            if !starts_an_object {
                return Err(ApiError::invalid_json("the body must be a JSON object"));
            }
            let mut deserializer = serde_json::Deserializer::from_slice(&bytes);
            let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
                let fields = matches!(error.inner().classify(), serde_json::error::Category::Data)
                    .then(|| field_errors::<T>(&bytes))
                    .unwrap_or_default();
                body_error(error).with_field_errors(fields)
            })?;
            deserializer.end().map_err(|e| {
                ApiError::invalid_json(format!("trailing data after the JSON value: {e}"))
            })?;
            Ok(JsonBody(value))
        })
    }
}

/// The id in a resource path (`/pets/{petId}`), parsed: anything but a positive integer up to
/// 2^53 - 1 is 400 `invalid_parameter`, never 404.
#[derive(Debug, Clone, Copy)]
pub struct PathId<T>(pub T);

impl<T: FromStr<Err = ValidationError>> FromRequest for PathId<T> {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let parsed = match req.match_info().iter().next() {
            Some((name, value)) => value
                .parse::<T>()
                .map(PathId)
                .map_err(|e| ApiError::invalid_parameter(format!("{name}: {}", e.reason))),
            None => Err(ApiError::internal()),
        };
        std::future::ready(parsed)
    }
}

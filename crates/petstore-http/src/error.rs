//! The HTTP layer's one error type, its JSON body, and the mapping from the domain's errors.

use std::fmt;

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use petstore_core::{DomainError, HoldEnd};

use lines::{checkout_refused, delivery_refused};

mod body;
mod lines;

pub use body::{ErrorBody, ErrorCode, FieldError, FieldErrorCode, MAX_FIELD_ERRORS};

/// An error answered to a client. Built from a [`DomainError`] by the one mapping below, or by
/// the HTTP layer itself (bad parameters, unknown routes, wrong media types).
#[derive(Debug, Clone)]
pub struct ApiError {
    status: StatusCode,
    code: ErrorCode,
    message: String,
    headers: Vec<(HeaderName, HeaderValue)>,
    errors: Vec<FieldError>,
    /// A refusal of several lines at once (a delivery): each line's own error by its number,
    /// for a page to place beside its row. The body names them as field errors.
    lines: Vec<(u16, ApiError)>,
}

impl ApiError {
    /// An error with this status, code and message.
    pub fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            headers: Vec::new(),
            errors: Vec::new(),
            lines: Vec::new(),
        }
    }

    /// Each refused line's own error, by the line's number from 1 (empty unless several
    /// lines were refused at once).
    pub fn refused_lines(&self) -> &[(u16, ApiError)] {
        &self.lines
    }

    /// The same error, listing the request body's bad fields.
    #[must_use]
    pub fn with_field_errors(mut self, errors: Vec<FieldError>) -> Self {
        self.errors = errors;
        self
    }

    /// The same error with one more response header.
    #[must_use]
    pub fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    /// The headers the error's answer carries besides its body (`Retry-After`, `Allow`).
    pub fn headers(&self) -> &[(HeaderName, HeaderValue)] {
        &self.headers
    }

    /// The error's code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The error's status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// What the error says, for the client.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// 400 `invalid_json`: the body is not JSON, or has the wrong JSON types.
    pub fn invalid_json(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, ErrorCode::InvalidJson, message)
    }

    /// 400 `validation_failed`: a field breaks a rule.
    pub fn validation(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::ValidationFailed,
            message,
        )
    }

    /// 400 `invalid_parameter`: a bad path or query parameter.
    pub fn invalid_parameter(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::InvalidParameter,
            message,
        )
    }

    /// 404 `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, message)
    }

    /// 405 `method_not_allowed`, with the methods the resource does serve.
    pub fn method_not_allowed(allow: &str) -> Self {
        let error = Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::MethodNotAllowed,
            format!("this resource serves {allow}"),
        );
        match HeaderValue::from_str(allow) {
            Ok(value) => error.with_header(header::ALLOW, value),
            Err(_) => error,
        }
    }

    /// 408 `request_timeout`: the body was not sent whole within `deadline`.
    pub fn request_timeout(deadline: std::time::Duration) -> Self {
        Self::new(
            StatusCode::REQUEST_TIMEOUT,
            ErrorCode::RequestTimeout,
            format!(
                "the request body did not arrive within {} ms",
                deadline.as_millis()
            ),
        )
        .with_header(header::CONNECTION, HeaderValue::from_static("close"))
    }

    /// 413 `payload_too_large`.
    pub fn payload_too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::PayloadTooLarge,
            format!("the request body is larger than {limit} bytes"),
        )
    }

    /// 415 `unsupported_media_type`.
    pub fn unsupported_media_type() -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::UnsupportedMediaType,
            "the request body must be application/json",
        )
    }

    /// 415 `unsupported_media_type`: a `Content-Encoding` this service cannot decode.
    pub fn unsupported_encoding(encoding: &str) -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::UnsupportedMediaType,
            format!(
                "Content-Encoding {encoding:?} is not supported: send the body as it is, or as \
                 gzip, deflate, br or zstd"
            ),
        )
    }

    /// 500 `internal`, with no detail: details go to the log.
    pub fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Internal,
            "an internal error occurred; it has been logged with this request's id",
        )
    }

    /// 503 `unavailable`, asking the client to retry in a second: the database is busy (no
    /// connection free in time, a lock held too long) or cannot be reached; the log says which.
    pub fn unavailable() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::Unavailable,
            "the database is busy or cannot be reached; retry shortly",
        )
        .with_header(header::RETRY_AFTER, HeaderValue::from_static("1"))
    }

    /// 503 `unavailable` for a fault of the storage, not of the request nor a busy database:
    /// the disk is full, failing or read-only, or the database file is gone. Retrying helps
    /// once the operator has acted; the log says which.
    pub fn storage_unavailable() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::Unavailable,
            "the database's storage cannot take writes now (a full or failing disk, or its file \
             gone); the operator has been told in the log: retry later",
        )
        .with_header(header::RETRY_AFTER, HeaderValue::from_static("1"))
    }

    /// 503 `outcome_unknown`: the write's commit was under way when the storage failed, so it
    /// may have taken effect. Unlike `unavailable`, a blind retry may do it twice; with the
    /// same `Idempotency-Key` it cannot.
    pub fn outcome_unknown() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::OutcomeUnknown,
            "the storage failed while saving this change, so it may or may not have been made: \
             retry with the same Idempotency-Key, which answers as the change was made if it \
             was, and makes it once if it was not",
        )
        .with_header(header::RETRY_AFTER, HeaderValue::from_static("1"))
    }

    /// The error a bare status stands for, for responses that arrive without a body of ours.
    pub fn for_status(status: StatusCode) -> Self {
        let code = match status.as_u16() {
            400 => ErrorCode::InvalidParameter,
            404 => ErrorCode::NotFound,
            405 => ErrorCode::MethodNotAllowed,
            408 => ErrorCode::RequestTimeout,
            410 => ErrorCode::Gone,
            413 => ErrorCode::PayloadTooLarge,
            415 => ErrorCode::UnsupportedMediaType,
            503 => ErrorCode::Unavailable,
            code if code >= 500 => ErrorCode::Internal,
            _ => ErrorCode::Error,
        };
        let reason = status.canonical_reason().unwrap_or("error");
        Self::new(status, code, reason.to_lowercase())
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.status.as_u16(),
            self.code,
            self.message
        )
    }
}

impl std::error::Error for ApiError {}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status);
        for (name, value) in &self.headers {
            response.insert_header((name.clone(), value.clone()));
        }
        response.json(ErrorBody {
            code: self.code,
            message: self.message.clone(),
            status: self.status.as_u16(),
            errors: self.errors.clone(),
        })
    }
}

/// The one mapping from the domain's errors to HTTP: each variant gets its status and code.
/// The match is exhaustive, so a new variant is a compile error here, not a runtime 500.
/// Infrastructure failures are logged here, in the request's span, and answered without detail.
impl From<DomainError> for ApiError {
    fn from(error: DomainError) -> Self {
        use ErrorCode as C;
        let (status, code) = match &error {
            DomainError::Validation(_) => (StatusCode::BAD_REQUEST, C::ValidationFailed),
            DomainError::NotFound { .. } => (StatusCode::NOT_FOUND, C::NotFound),
            DomainError::Forbidden { .. } => (StatusCode::FORBIDDEN, C::Forbidden),
            DomainError::CategoryExists { .. } => (StatusCode::CONFLICT, C::CategoryExists),
            DomainError::CategoryInUse { .. } => (StatusCode::CONFLICT, C::CategoryInUse),
            DomainError::PetHasOpenOrders { .. } => (StatusCode::CONFLICT, C::PetHasOpenOrders),
            DomainError::PetNotAvailable { .. } => (StatusCode::CONFLICT, C::PetNotAvailable),
            DomainError::InsufficientStock { .. } => (StatusCode::CONFLICT, C::InsufficientStock),
            DomainError::PriceMissing { .. } => (StatusCode::CONFLICT, C::PriceMissing),
            DomainError::PetRepeated { .. } => (StatusCode::UNPROCESSABLE_ENTITY, C::PetRepeated),
            DomainError::TotalMismatch { .. } => (StatusCode::CONFLICT, C::TotalMismatch),
            DomainError::UpgradeUnfinished => {
                (StatusCode::SERVICE_UNAVAILABLE, C::UpgradeUnfinished)
            }
            DomainError::CheckoutRefused { lines } => {
                return checkout_refused(&error, lines);
            }
            DomainError::DeliveryRefused { lines } => {
                return delivery_refused(&error, lines);
            }
            DomainError::HoldEnded {
                how: HoldEnd::Expired,
                ..
            } => (StatusCode::CONFLICT, C::HoldExpired),
            DomainError::HoldEnded { .. } => (StatusCode::CONFLICT, C::HoldEnded),
            DomainError::HoldTooLong { .. } => (StatusCode::UNPROCESSABLE_ENTITY, C::HoldTooLong),
            DomainError::OrderNotCancellable { .. } => {
                (StatusCode::CONFLICT, C::OrderNotCancellable)
            }
            DomainError::InvalidTransition(_) => (StatusCode::CONFLICT, C::InvalidTransition),
            DomainError::UnknownCategory { .. } => {
                (StatusCode::UNPROCESSABLE_ENTITY, C::UnknownCategory)
            }
            DomainError::UnknownPet { .. } => (StatusCode::UNPROCESSABLE_ENTITY, C::UnknownPet),
            DomainError::IdempotencyKeyReused => {
                (StatusCode::UNPROCESSABLE_ENTITY, C::IdempotencyKeyReused)
            }
            DomainError::ForbiddenTarget { .. } => {
                (StatusCode::UNPROCESSABLE_ENTITY, C::ForbiddenTarget)
            }
            DomainError::PreconditionFailed(_) => {
                (StatusCode::PRECONDITION_FAILED, C::PreconditionFailed)
            }
            DomainError::Unavailable(detail) if petstore_store::is_storage_fault(detail) => {
                tracing::error!(detail = %error_chain(detail), "storage cannot take writes");
                return ApiError::storage_unavailable();
            }
            DomainError::Unavailable(detail) => {
                tracing::warn!(detail = %error_chain(detail), "storage unavailable");
                return ApiError::unavailable();
            }
            DomainError::Storage(detail) => {
                tracing::error!(detail = %error_chain(detail), "storage failure");
                return ApiError::internal();
            }
            DomainError::OutcomeUnknown(detail) => {
                tracing::error!(detail = %error_chain(detail), "write outcome unknown");
                return ApiError::outcome_unknown();
            }
        };
        ApiError::new(status, code, error.to_string())
    }
}

/// An error and its sources, for a log line: "a: b: c".
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        // A wrapper often repeats its source's message; say each thing once.
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests;

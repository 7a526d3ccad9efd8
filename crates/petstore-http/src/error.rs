//! The HTTP layer's one error type, its JSON body, and the mapping from the domain's errors.

use std::fmt;

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use petstore_core::DomainError;
use serde::Serialize;
use utoipa::ToSchema;

/// The body of every error response: `{"code": "...", "message": "...", "status": N}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = Error)]
pub struct ErrorBody {
    /// A stable, machine-readable code (`insufficient_stock`, `validation_failed`, …).
    pub code: &'static str,
    /// What went wrong, for the developer reading it.
    pub message: String,
    /// The HTTP status, repeated.
    pub status: u16,
}

/// An error answered to a client. Built from a [`DomainError`] by the one mapping below, or by
/// the HTTP layer itself (bad parameters, unknown routes, wrong media types).
#[derive(Debug, Clone)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl ApiError {
    /// An error with this status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            headers: Vec::new(),
        }
    }

    /// The same error with one more response header.
    #[must_use]
    pub fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    /// The error's code.
    pub fn code(&self) -> &'static str {
        self.code
    }

    /// 400 `invalid_json`: the body is not JSON, or has the wrong JSON types.
    pub fn invalid_json(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_json", message)
    }

    /// 400 `validation_failed`: a field breaks a rule.
    pub fn validation(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "validation_failed", message)
    }

    /// 400 `invalid_parameter`: a bad path or query parameter.
    pub fn invalid_parameter(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_parameter", message)
    }

    /// 404 `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 405 `method_not_allowed`, with the methods the resource does serve.
    pub fn method_not_allowed(allow: &str) -> Self {
        let error = Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            format!("this resource serves {allow}"),
        );
        match HeaderValue::from_str(allow) {
            Ok(value) => error.with_header(header::ALLOW, value),
            Err(_) => error,
        }
    }

    /// 413 `payload_too_large`.
    pub fn payload_too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("the request body is larger than {limit} bytes"),
        )
    }

    /// 415 `unsupported_media_type`.
    pub fn unsupported_media_type() -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "the request body must be application/json",
        )
    }

    /// 500 `internal`, with no detail: details go to the log.
    pub fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "an internal error occurred; it has been logged with this request's id",
        )
    }

    /// 503 `unavailable`, asking the client to retry in a second.
    pub fn unavailable() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "the service is busy; retry shortly",
        )
        .with_header(header::RETRY_AFTER, HeaderValue::from_static("1"))
    }

    /// The error a bare status stands for, for responses that arrive without a body of ours.
    pub fn for_status(status: StatusCode) -> Self {
        let code = match status.as_u16() {
            400 => "invalid_parameter",
            404 => "not_found",
            405 => "method_not_allowed",
            410 => "gone",
            413 => "payload_too_large",
            415 => "unsupported_media_type",
            503 => "unavailable",
            code if code >= 500 => "internal",
            _ => "error",
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
        })
    }
}

/// The one mapping from the domain's errors to HTTP: each contract code gets its status.
/// Infrastructure failures are logged here, in the request's span, and answered without detail.
impl From<DomainError> for ApiError {
    fn from(error: DomainError) -> Self {
        let status = match &error {
            DomainError::Validation(_) => StatusCode::BAD_REQUEST,
            DomainError::NotFound { .. } => StatusCode::NOT_FOUND,
            DomainError::CategoryExists { .. }
            | DomainError::CategoryInUse { .. }
            | DomainError::PetHasOpenOrders { .. }
            | DomainError::PetNotAvailable { .. }
            | DomainError::InsufficientStock { .. }
            | DomainError::OrderNotCancellable { .. }
            | DomainError::InvalidTransition(_) => StatusCode::CONFLICT,
            DomainError::UnknownCategory { .. }
            | DomainError::UnknownPet { .. }
            | DomainError::IdempotencyKeyReused
            | DomainError::ForbiddenTarget { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            DomainError::PreconditionFailed(_) => StatusCode::PRECONDITION_FAILED,
            DomainError::Unavailable(detail) => {
                tracing::warn!(%detail, "storage unavailable");
                return ApiError::unavailable();
            }
            DomainError::Storage(detail) => {
                tracing::error!(%detail, "storage failure");
                return ApiError::internal();
            }
            // The domain's error enum may grow; until this mapping learns a new variant,
            // it is a server-side bug, reported as such.
            other => {
                tracing::error!(error = %other, "domain error without an HTTP mapping");
                return ApiError::internal();
            }
        };
        ApiError::new(status, error.code(), error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use petstore_core::{CategoryId, PetId, PetStatus};

    use super::*;

    #[test]
    fn each_domain_refusal_gets_its_status() {
        let pet = PetId::new(1).unwrap();
        let cases = [
            (
                DomainError::PetNotAvailable {
                    id: pet,
                    status: PetStatus::Sold,
                },
                409,
            ),
            (
                DomainError::InsufficientStock {
                    pet_id: pet,
                    requested: 2,
                    available: 1,
                },
                409,
            ),
            (
                DomainError::UnknownCategory {
                    id: CategoryId::new(1).unwrap(),
                },
                422,
            ),
            (DomainError::UnknownPet { id: pet }, 422),
            (DomainError::IdempotencyKeyReused, 422),
            (
                DomainError::PreconditionFailed(petstore_core::Resource::Pet),
                412,
            ),
            (DomainError::Unavailable("locked".into()), 503),
            (DomainError::Storage("disk on fire".into()), 500),
        ];
        for (error, status) in cases {
            let code = error.code();
            let api = ApiError::from(error);
            assert_eq!(api.status_code().as_u16(), status, "{code}");
            assert_eq!(api.code(), code);
        }
    }

    #[test]
    fn infrastructure_details_never_reach_the_client() {
        let api = ApiError::from(DomainError::Storage("SELECT * FROM secrets".into()));
        assert!(!api.message.contains("SELECT"));
        let api = ApiError::from(DomainError::Unavailable("/var/db is locked".into()));
        assert!(!api.message.contains("/var"));
        assert!(
            api.headers
                .iter()
                .any(|(name, _)| name == header::RETRY_AFTER)
        );
    }
}

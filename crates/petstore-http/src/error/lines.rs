//! Refusals of several lines at once (a checkout's, a delivery's) as HTTP answers: the most
//! telling line's status and code, every line named.

use actix_web::http::StatusCode;
use petstore_core::{DomainError, LineRefusal};

use super::{ApiError, ErrorCode, FieldError, FieldErrorCode};

/// A refused checkout: the status and code of its most telling line's refusal, each refused
/// line named in `errors`.
pub(super) fn checkout_refused(error: &DomainError, lines: &[LineRefusal]) -> ApiError {
    use ErrorCode as C;
    let (status, code) = match error.code() {
        "unknown_pet" => (StatusCode::UNPROCESSABLE_ENTITY, C::UnknownPet),
        "price_missing" => (StatusCode::CONFLICT, C::PriceMissing),
        "insufficient_stock" => (StatusCode::CONFLICT, C::InsufficientStock),
        _ => (StatusCode::CONFLICT, C::PetNotAvailable),
    };
    let errors = lines
        .iter()
        .map(|line| FieldError {
            field: format!("/{}", line.field()),
            code: match line.error {
                DomainError::UnknownPet { .. } => FieldErrorCode::UnknownPet,
                DomainError::PriceMissing { .. } => FieldErrorCode::PriceMissing,
                DomainError::InsufficientStock { .. } => FieldErrorCode::InsufficientStock,
                _ => FieldErrorCode::PetNotAvailable,
            },
            message: line.error.to_string(),
        })
        .collect();
    let mut refused = ApiError::new(status, code, error.to_string()).with_field_errors(errors);
    refused.lines = each_line(lines);
    refused
}

/// Each refused line's own error, by its number.
fn each_line(lines: &[LineRefusal]) -> Vec<(u16, ApiError)> {
    lines
        .iter()
        .map(|line| (line.line_no, ApiError::from(line.error.clone())))
        .collect()
}

/// A refused delivery: the status and code of its most telling line (as
/// [`DomainError::code`] picks it), each line named as a field error and kept as its own.
pub(super) fn delivery_refused(error: &DomainError, lines: &[LineRefusal]) -> ApiError {
    let each = each_line(lines);
    let telling = each
        .iter()
        .find(|(_, line)| line.code.as_str() == error.code())
        .map_or(
            (StatusCode::BAD_REQUEST, ErrorCode::ValidationFailed),
            |(_, line)| (line.status, line.code),
        );
    let errors = each
        .iter()
        .map(|(line_no, line)| FieldError {
            field: format!("/lines/{}", line_no.saturating_sub(1)),
            code: FieldErrorCode::InvalidValue,
            message: line.message.clone(),
        })
        .collect();
    let mut refused =
        ApiError::new(telling.0, telling.1, error.to_string()).with_field_errors(errors);
    refused.lines = each;
    refused
}

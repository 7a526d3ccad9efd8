//! What an error answer carries on the wire: its body ([`ErrorBody`]), the stable codes
//! ([`ErrorCode`]) and a request body's field errors, all published in the OpenAPI document.
//! Kept apart from [`ApiError`](super::ApiError) and the mapping from the domain's errors
//! (`error.rs`), which decide what goes in them.

use std::fmt;

use serde::Serialize;
use utoipa::ToSchema;

/// Every code an error body can carry: the contract's stable, machine-readable codes, published
/// as an enum in the OpenAPI document so that clients get them as a type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The body is not JSON, or not the right JSON types.
    InvalidJson,
    /// A field breaks a rule; the message names the field.
    ValidationFailed,
    /// A bad path or query parameter, cursor or header.
    InvalidParameter,
    /// No key, or an unknown or revoked key.
    Unauthorized,
    /// The key's role does not allow the operation.
    Forbidden,
    /// No such resource (or not the caller's), or no such route.
    NotFound,
    /// A path under an API version this service does not serve.
    UnsupportedVersion,
    /// The resource does not serve this method; `Allow` lists those it does.
    MethodNotAllowed,
    /// Another category already has this name.
    CategoryExists,
    /// The category still has pets.
    CategoryInUse,
    /// The pet still has open orders.
    PetHasOpenOrders,
    /// The pet is not available for orders.
    PetNotAvailable,
    /// Not enough units in stock (for a checkout: `errors` names every short line).
    InsufficientStock,
    /// A checkout line's pet has no price.
    PriceMissing,
    /// A checkout names a pet on two lines.
    PetRepeated,
    /// A checkout's lines come to another total than `expectedTotal`: a price changed.
    TotalMismatch,
    /// A checkout of several lines, or a hold, waits for the operator to finish the upgrade
    /// (`petstore migrate --finish`); a one-line checkout or order goes through now.
    UpgradeUnfinished,
    /// The hold was released or checked out already.
    HoldEnded,
    /// The hold's expiry has passed: its units are back, or about to be.
    HoldExpired,
    /// A hold asks for a longer life than this shop allows (`--hold-ttl-max`).
    HoldTooLong,
    /// The order is complete and cannot be cancelled.
    OrderNotCancellable,
    /// A change the rules forbid.
    InvalidTransition,
    /// A sunset operation.
    Gone,
    /// `If-Match` does not match the current `ETag`.
    PreconditionFailed,
    /// The body is larger than the service accepts.
    PayloadTooLarge,
    /// The body is not `application/json`.
    UnsupportedMediaType,
    /// A body names a category that does not exist.
    UnknownCategory,
    /// A body names a pet that does not exist.
    UnknownPet,
    /// The same `Idempotency-Key` was used for a different request.
    IdempotencyKeyReused,
    /// A webhook URL's host is a private or reserved address.
    ForbiddenTarget,
    /// Too many requests; `Retry-After` says when to retry.
    RateLimited,
    /// A bug; details only in the log.
    Internal,
    /// The database is busy or down, or the service is stopping; retry later.
    Unavailable,
    /// A write's storage failed while committing it: it may or may not have taken effect.
    /// Retry with the same `Idempotency-Key`.
    OutcomeUnknown,
    /// The request's body did not arrive in time.
    RequestTimeout,
    /// A status the framework answered that has no code of its own.
    Error,
}

impl ErrorCode {
    /// The code as it appears in the body.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidJson => "invalid_json",
            ErrorCode::ValidationFailed => "validation_failed",
            ErrorCode::InvalidParameter => "invalid_parameter",
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::NotFound => "not_found",
            ErrorCode::UnsupportedVersion => "unsupported_version",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::CategoryExists => "category_exists",
            ErrorCode::CategoryInUse => "category_in_use",
            ErrorCode::PetHasOpenOrders => "pet_has_open_orders",
            ErrorCode::PetNotAvailable => "pet_not_available",
            ErrorCode::InsufficientStock => "insufficient_stock",
            ErrorCode::PriceMissing => "price_missing",
            ErrorCode::PetRepeated => "pet_repeated",
            ErrorCode::TotalMismatch => "total_mismatch",
            ErrorCode::UpgradeUnfinished => "upgrade_unfinished",
            ErrorCode::HoldEnded => "hold_ended",
            ErrorCode::HoldExpired => "hold_expired",
            ErrorCode::HoldTooLong => "hold_too_long",
            ErrorCode::OrderNotCancellable => "order_not_cancellable",
            ErrorCode::InvalidTransition => "invalid_transition",
            ErrorCode::Gone => "gone",
            ErrorCode::PreconditionFailed => "precondition_failed",
            ErrorCode::PayloadTooLarge => "payload_too_large",
            ErrorCode::UnsupportedMediaType => "unsupported_media_type",
            ErrorCode::UnknownCategory => "unknown_category",
            ErrorCode::UnknownPet => "unknown_pet",
            ErrorCode::IdempotencyKeyReused => "idempotency_key_reused",
            ErrorCode::ForbiddenTarget => "forbidden_target",
            ErrorCode::RateLimited => "rate_limited",
            ErrorCode::Internal => "internal",
            ErrorCode::Unavailable => "unavailable",
            ErrorCode::OutcomeUnknown => "outcome_unknown",
            ErrorCode::RequestTimeout => "request_timeout",
            ErrorCode::Error => "error",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The most bad fields a refused request body is searched for (each found means another
/// parse of the body); a refused checkout names each of its up to 50 lines.
pub const MAX_FIELD_ERRORS: usize = 20;

/// The body of every error response: `{"code": "...", "message": "...", "status": N}`, and for
/// a request body with bad fields, `errors`: every one of them.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = Error)]
pub struct ErrorBody {
    /// A stable, machine-readable code (`insufficient_stock`, `validation_failed`, …).
    pub code: ErrorCode,
    /// What went wrong, for the developer reading it.
    pub message: String,
    /// The HTTP status, repeated.
    pub status: u16,
    /// When the request body had bad fields: each of them (at most 20); for a refused
    /// checkout, each refused line (at most 50). `message` describes the first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(max_items = 50)]
    pub errors: Vec<FieldError>,
}

/// One field of a request body that was missing, unknown or invalid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct FieldError {
    /// Where it is, as a JSON pointer into the body (RFC 6901): `/name`, `/lines/0/quantity`.
    #[schema(example = "/categoryId")]
    pub field: String,
    /// What is wrong with it.
    pub code: FieldErrorCode,
    /// The same, in words.
    pub message: String,
}

/// What is wrong with a field of a request body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FieldErrorCode {
    /// A required field is absent.
    Missing,
    /// The body has a field the operation does not know.
    Unknown,
    /// The field has the wrong JSON type (a string for a number…).
    InvalidType,
    /// The field has the right type but breaks a rule (length, range, allowed values…).
    InvalidValue,
    /// A checkout line's pet does not exist.
    UnknownPet,
    /// A checkout line's pet has no price.
    PriceMissing,
    /// A checkout line asks for more units than its pet has.
    InsufficientStock,
    /// A checkout line's pet is not available.
    PetNotAvailable,
}

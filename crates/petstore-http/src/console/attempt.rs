//! Placing an order from a console form at most once. Each form that places one carries an
//! attempt: a random token written into the page, sent back as the order's idempotency key
//! (under the session's key, as an API client's would be). A second submit of the same form,
//! a double click, or a resend after a lost answer gets the order the first placed, said
//! again, instead of a second order. A refused order records nothing, so the form shown again
//! may be sent again; it carries a new attempt anyway.

use maud::{Markup, html};
use petstore_core::{IdempotencyKey, Order};
use serde::{Deserialize, Serialize};

use crate::auth::random_bytes;
use crate::error::ApiError;

/// The hidden field of a form that places an order: a new attempt.
pub(super) fn attempt_field() -> Result<Markup, ApiError> {
    let token: String = random_bytes()?[..16]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    Ok(html! { input type="hidden" name="attempt" value=(token); })
}

/// The idempotency key of the order that the form at `path`, sent with `attempt` (its
/// `attempt` field), asks for (`request`, which tells a resend from another order under the
/// same attempt); none for a form sent without one.
pub(super) fn key(
    attempt: &str,
    path: &str,
    request: &impl Serialize,
) -> Result<Option<IdempotencyKey>, ApiError> {
    let attempt = attempt.trim();
    if attempt.is_empty() {
        return Ok(None);
    }
    let body = serde_json::to_vec(request).map_err(|_| ApiError::internal())?;
    IdempotencyKey::new(&format!("console-{attempt}"), "POST", path, &body)
        .map(Some)
        .map_err(|error| ApiError::from(petstore_core::DomainError::from(error)))
}

/// What an attempt keeps of the order it placed: its id and what the page said of it.
#[derive(Debug, Serialize, Deserialize)]
struct Placed {
    id: i64,
    said: String,
}

/// The answer an attempt records: the order's id and `said`.
pub(super) fn record(order: &Order, said: &str) -> Vec<u8> {
    let placed = Placed {
        id: order.id.get(),
        said: said.to_owned(),
    };
    serde_json::to_vec(&placed).unwrap_or_default()
}

/// The order an earlier submit of the same attempt placed, and what was said of it.
pub(super) fn replayed(recorded: &[u8]) -> Option<(i64, String)> {
    serde_json::from_slice::<Placed>(recorded)
        .ok()
        .map(|placed| (placed.id, placed.said))
}

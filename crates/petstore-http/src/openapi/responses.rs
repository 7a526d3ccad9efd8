//! The responses every operation shares, by what it takes (a key, a path, a query, a body):
//! the errors it can answer, and the headers on every answer. Kept apart from the document's
//! assembly (`mod.rs`), which calls it per operation.

use petstore_core::PageSize;
use utoipa::openapi::RefOr;
use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::response::Response;
use utoipa::openapi::schema::Schema;

use super::{error_response, is_in, required_roles, string_header};

/// The errors any operation can answer, by what it takes, and the `X-Request-Id` header on
/// every response.
pub(super) fn add_shared_responses(operation: &mut Operation) {
    let roles = required_roles(operation);
    let parameters = operation.parameters.as_deref().unwrap_or_default();
    let has_path = parameters.iter().any(|p| is_in(p, ParameterIn::Path));
    let has_query = parameters.iter().any(|p| is_in(p, ParameterIn::Query));
    let has_body = operation.request_body.is_some();

    let mut bad_request = Vec::new();
    if has_path || has_query {
        bad_request
            .push("`invalid_parameter`: a path or query parameter is malformed or out of range");
    }
    if has_body {
        bad_request.push("`invalid_json`: the body is not JSON or has a wrong JSON type");
        bad_request.push("`validation_failed`: a field is missing, unknown or breaks a rule; the message names it");
    }
    let mut shared: Vec<(&str, Response)> = Vec::new();
    if let Some(roles) = &roles {
        let mut unauthorized = error_response(
            "`unauthorized`: no API key, or not a valid one (unknown, revoked, malformed).",
        );
        unauthorized
            .headers
            .insert("WWW-Authenticate".into(), string_header("`Bearer`."));
        shared.push(("401", unauthorized));
        if !roles.is_empty() {
            shared.push((
                "403",
                error_response(&format!(
                    "`forbidden`: this needs a {} key.",
                    roles.join(" or ")
                )),
            ));
        }
        let mut limited = error_response(
            "`rate_limited`: too many requests for this key (or, without a valid key, this address).",
        );
        limited.headers.insert(
            "Retry-After".into(),
            string_header("Seconds to wait before retrying."),
        );
        shared.push(("429", limited));
    }
    if !bad_request.is_empty() {
        shared.push(("400", error_response(&bad_request.join("; "))));
    }
    if has_path {
        shared.push(("404", error_response("`not_found`: no such resource.")));
    }
    if has_body {
        shared.push((
            "413",
            error_response("`payload_too_large`: the body is over the size limit."),
        ));
        shared.push((
            "415",
            error_response("`unsupported_media_type`: the body must be `application/json`."),
        ));
    }
    shared.push((
        "500",
        error_response(
            "`internal`: a bug; the details are in the log under this response's `X-Request-Id`.",
        ),
    ));
    let mut unavailable = error_response(
        "`unavailable`: the database is busy or down; retry after `Retry-After` seconds.",
    );
    unavailable.headers.insert(
        "Retry-After".into(),
        string_header("Seconds to wait before retrying."),
    );
    shared.push(("503", unavailable));

    let responses = &mut operation.responses.responses;
    for (status, response) in shared {
        responses
            .entry(status.to_owned())
            .or_insert(RefOr::T(response));
    }
    for response in responses.values_mut() {
        if let RefOr::T(response) = response {
            response.headers.insert(
                "X-Request-Id".into(),
                string_header(
                    "The request's id: the client's own when it sent a sane one, else a new one.",
                ),
            );
            // The rate limit runs before anything else under /v1, so every answer has these.
            response.headers.insert(
                "RateLimit-Policy".into(),
                string_header(
                    "The quota and its window, as `\"per-node\";q=<requests>;w=<seconds>` (IETF httpapi-ratelimit-headers). Each node counts on its own.",
                ),
            );
            response.headers.insert(
                "RateLimit".into(),
                string_header(
                    "What is left of the quota and when it is whole again, as `\"per-node\";r=<remaining>;t=<seconds>`.",
                ),
            );
            bound_arrays(response);
        }
    }
}

/// Every list answers at most one page: its array says so (`maxItems`), so that clients and
/// linters know the bound.
fn bound_arrays(response: &mut Response) {
    for content in response.content.values_mut() {
        let RefOr::T(content) = content else {
            continue;
        };
        if let Some(RefOr::T(Schema::Array(array))) = content.schema.as_mut() {
            array.max_items = usize::try_from(PageSize::MAX).ok();
        }
    }
}

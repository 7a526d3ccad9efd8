//! Conditional requests and idempotency in the document: the `ETag`, `If-None-Match`,
//! `If-Match` and `Idempotency-Key` headers, and the 304 and 412 answers, each operation gets by
//! its method. Kept apart from the document's assembly (`mod.rs`), which calls it per operation.

use utoipa::openapi::RefOr;
use utoipa::openapi::Required;
use utoipa::openapi::path::{HttpMethod, Operation, Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Type};

use super::{error_response, is_in, string_header};
use crate::conditional::IDEMPOTENCY_KEY_PATTERN;

/// The creates that honour `Idempotency-Key` (`createKey` does not: a replay would need its
/// secret, which is never stored).
const IDEMPOTENT: [&str; 4] = ["createPet", "createCategory", "placeOrder", "checkout"];

/// The `POST`s that change a resource as it is, and so take `If-Match` as a change does.
const CONDITIONAL_POSTS: [&str; 1] = ["adjustInventory"];

fn header_parameter(name: &str, description: &str, pattern: Option<&str>) -> RefOr<Parameter> {
    RefOr::T(
        ParameterBuilder::new()
            .name(name)
            .parameter_in(ParameterIn::Header)
            .required(Required::False)
            .description(Some(description))
            .schema(Some(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(pattern),
            ))
            .build(),
    )
}

/// `ETag` on what carries a representation; `If-None-Match` and 304 on single reads;
/// `If-Match` and 412 on changes; `Idempotency-Key` on the creates that honour it.
pub(super) fn add_conditions(method: &HttpMethod, operation: &mut Operation) {
    let single = operation
        .parameters
        .as_deref()
        .unwrap_or_default()
        .iter()
        .any(|p| is_in(p, ParameterIn::Path));
    let id = operation.operation_id.clone().unwrap_or_default();
    let changes = matches!(
        method,
        HttpMethod::Put | HttpMethod::Patch | HttpMethod::Delete
    ) || (*method == HttpMethod::Post && CONDITIONAL_POSTS.contains(&id.as_str()));
    let parameters = operation.parameters.get_or_insert_with(Vec::new);
    let responses = &mut operation.responses.responses;
    match method {
        HttpMethod::Get if single => {
            parameters.push(header_parameter(
                "If-None-Match",
                "`*` or a comma-separated list of entity tags the client has: if one is current, the answer is 304 with no body. A value of another form is ignored.",
                None,
            ));
            let mut not_modified = ResponseBuilder::new()
                .description("Not modified: `If-None-Match` names the current `ETag`.")
                .build();
            not_modified
                .headers
                .insert("ETag".into(), string_header("The current entity tag."));
            responses.insert("304".into(), RefOr::T(not_modified));
        }
        _ if changes => {
            parameters.push(header_parameter(
                "If-Match",
                "`*` or a comma-separated list of entity tags (from `ETag`): apply only if the resource still has one of them (strong comparison), or exists (`*`). Checked in the same transaction as the change. A value of another form matches nothing (412).",
                None,
            ));
            responses.insert(
                "412".into(),
                RefOr::T(error_response("`precondition_failed`: the resource changed since the `ETag` named in `If-Match`; read it again.")),
            );
        }
        HttpMethod::Post if IDEMPOTENT.contains(&id.as_str()) => {
            parameters.push(header_parameter(
                "Idempotency-Key",
                "Makes a retry safe: a request repeated with the same key and body within 24 hours gets the first answer again and changes nothing.",
                Some(IDEMPOTENCY_KEY_PATTERN),
            ));
            let reused = "`idempotency_key_reused`: this `Idempotency-Key` was used for a different request.";
            match responses.get_mut("422") {
                Some(RefOr::T(response)) => {
                    response.description = format!("{} {reused}", response.description);
                }
                _ => {
                    responses.insert("422".into(), RefOr::T(error_response(reused)));
                }
            }
        }
        _ => {}
    }
    for (status, response) in responses.iter_mut() {
        let carries_representation = matches!(status.as_str(), "200" | "201")
            && (single || IDEMPOTENT.contains(&id.as_str()));
        if let (true, RefOr::T(response)) = (carries_representation, response) {
            response.headers.insert(
                "ETag".into(),
                string_header(
                    "The representation's entity tag, for `If-Match` and `If-None-Match`.",
                ),
            );
        }
    }
    if parameters.is_empty() {
        operation.parameters = None;
    }
}

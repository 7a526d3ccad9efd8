//! The OpenAPI 3.1 document, generated from the code: every operation from the
//! [`endpoints`](crate::routes::endpoints) that serve it, then the responses every operation
//! shares (errors, `X-Request-Id`), deprecation and stability markers added in one place.

use std::sync::OnceLock;

use utoipa::OpenApi;
use utoipa::openapi::Required;
use utoipa::openapi::extensions::ExtensionsBuilder;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::path::{HttpMethod, Operation, Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, Http, HttpAuthScheme, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Deprecated, Ref, RefOr};
use utoipa_actix_web::OpenApiFactory;

mod events;

use petstore_core::PageSize;

use crate::conditional::IDEMPOTENCY_KEY_PATTERN;
use crate::error::ErrorBody;
use crate::routes::{self, pets};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Petstore API",
        version = "1.0.0",
        description = "A catalogue of pets in categories, customer orders for pets, and stock per pet.",
        license(name = "MIT OR Apache-2.0", identifier = "MIT OR Apache-2.0"),
        contact(name = "The petstore maintainers"),
    ),
    servers((url = "/v1", description = "Version 1 of the API")),
    components(schemas(ErrorBody)),
    tags(
        (name = "pets", description = "The catalogue of pets."),
        (name = "categories", description = "Categories of pets."),
        (name = "store", description = "Orders for pets."),
        (name = "inventory", description = "Stock per pet."),
        (name = "events", description = "The feed of every change, as CloudEvents (staff)."),
        (name = "keys", description = "API keys (admin only)."),
        (name = "webhooks", description = "Subscriptions that receive events by signed POST (admin only)."),
        (name = "meta", description = "About the API."),
    )
)]
struct BaseDocument;

/// The stability of operations that are not stable: `x-stability`, mirrored as oasdiff's
/// `x-stability-level` (which has no "experimental": `alpha` is its nearest word).
const STABILITY: [(&str, &str, &str); 8] = [
    ("cancelOrder", "beta", "beta"),
    ("listWebhooks", "beta", "beta"),
    ("createWebhook", "beta", "beta"),
    ("getWebhook", "beta", "beta"),
    ("deleteWebhook", "beta", "beta"),
    ("listWebhookDeliveries", "beta", "beta"),
    ("updateInventory", "experimental", "alpha"),
    ("streamEvents", "experimental", "alpha"),
];

/// The document, built once.
pub fn document() -> &'static utoipa::openapi::OpenApi {
    static DOCUMENT: OnceLock<utoipa::openapi::OpenApi> = OnceLock::new();
    DOCUMENT.get_or_init(build)
}

fn build() -> utoipa::openapi::OpenApi {
    let mut doc = BaseDocument::openapi();
    let components = doc.components.get_or_insert_with(Default::default);
    for endpoint in routes::endpoints() {
        doc.paths.merge(endpoint.paths());
        let mut schemas = Vec::new();
        endpoint.schemas(&mut schemas);
        components.schemas.extend(schemas);
    }
    components.add_security_scheme(
        "bearerAuth",
        SecurityScheme::Http(
            Http::builder()
                .scheme(HttpAuthScheme::Bearer)
                .description(Some(
                    "Pass your API key as a Bearer token. An operation's requirement names the \
                     role it needs (`staff`: staff or admin; `admin`: admin only); an empty \
                     one takes any valid key.",
                ))
                .build(),
        ),
    );
    components.add_security_scheme(
        "webhookSignature",
        SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
            "webhook-signature",
            "What a webhook receiver checks (not a key): the HMAC-SHA256 of the delivery, keyed \
             with the subscription's secret. See each `webhooks` entry and docs/events.md.",
        ))),
    );
    add_links(&mut doc);
    events::describe_events(&mut doc);
    for item in doc.paths.paths.values_mut() {
        for (method, operation) in [
            (HttpMethod::Get, &mut item.get),
            (HttpMethod::Post, &mut item.post),
            (HttpMethod::Put, &mut item.put),
            (HttpMethod::Patch, &mut item.patch),
            (HttpMethod::Delete, &mut item.delete),
        ] {
            if let Some(operation) = operation {
                add_conditions(&method, operation);
                describe_access(operation);
                add_shared_responses(operation);
                mark(operation);
            }
        }
    }
    doc
}

/// What a create answers, and the operations that take the new id: lets clients (and
/// stateful test tools) follow from a new resource to what can be done with it.
const LINKS: [(&str, &str, &str, &[&str]); 4] = [
    (
        "/pets",
        "petId",
        "createPet",
        &[
            "getPet",
            "replacePet",
            "deletePet",
            "getInventoryItem",
            "updateInventory",
        ],
    ),
    (
        "/categories",
        "categoryId",
        "createCategory",
        &["getCategory", "replaceCategory", "deleteCategory"],
    ),
    (
        "/store/orders",
        "orderId",
        "placeOrder",
        &["getOrder", "updateOrder", "cancelOrder"],
    ),
    (
        "/webhooks",
        "webhookId",
        "createWebhook",
        &["getWebhook", "deleteWebhook", "listWebhookDeliveries"],
    ),
];

fn add_links(doc: &mut utoipa::openapi::OpenApi) {
    for (path, parameter, creator, targets) in LINKS {
        let Some(item) = doc.paths.paths.get_mut(path) else {
            continue;
        };
        let Some(operation) = item.post.as_mut() else {
            continue;
        };
        debug_assert_eq!(operation.operation_id.as_deref(), Some(creator));
        let Some(RefOr::T(created)) = operation.responses.responses.get_mut("201") else {
            continue;
        };
        for target in targets {
            let link = LinkBuilder::new()
                .operation_id(*target)
                .parameter(parameter, "$response.body#/id")
                .build();
            created.links.insert((*target).to_owned(), RefOr::T(link));
        }
    }
}

/// The creates that honour `Idempotency-Key` (`createKey` does not: a replay would need its
/// secret, which is never stored).
const IDEMPOTENT: [&str; 3] = ["createPet", "createCategory", "placeOrder"];

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
fn add_conditions(method: &HttpMethod, operation: &mut Operation) {
    let single = operation
        .parameters
        .as_deref()
        .unwrap_or_default()
        .iter()
        .any(|p| is_in(p, ParameterIn::Path));
    let id = operation.operation_id.clone().unwrap_or_default();
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
        HttpMethod::Put | HttpMethod::Patch | HttpMethod::Delete => {
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

fn error_response(description: &str) -> Response {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("Error")))
                .build(),
        )
        .build()
}

fn string_header(description: &str) -> RefOr<utoipa::openapi::header::Header> {
    RefOr::T(
        HeaderBuilder::new()
            .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
            .description(Some(description))
            .build(),
    )
}

fn is_in(parameter: &RefOr<utoipa::openapi::path::Parameter>, place: ParameterIn) -> bool {
    matches!(parameter, RefOr::T(p) if p.parameter_in == place)
}

/// The roles an operation's `bearerAuth` requirement names, or `None` when it needs no key.
fn required_roles(operation: &Operation) -> Option<Vec<String>> {
    let requirements = serde_json::to_value(operation.security.as_ref()?).ok()?;
    let roles = requirements
        .as_array()?
        .iter()
        .find_map(|r| r.get("bearerAuth"))?;
    serde_json::from_value(roles.clone()).ok()
}

/// The errors any operation can answer, by what it takes, and the `X-Request-Id` header on
/// every response.
fn add_shared_responses(operation: &mut Operation) {
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

/// Says in each operation's description which key it needs (from its security requirement),
/// after what its handler's documentation says: a reader of the description alone knows.
fn describe_access(operation: &mut Operation) {
    let access = match required_roles(operation).as_deref() {
        None => return,
        Some([]) => "Needs any valid API key.".to_owned(),
        Some(roles) if roles.iter().any(|r| r == "staff") => {
            "Needs a staff or admin key.".to_owned()
        }
        Some(roles) => format!("Needs a {} key.", roles.join(" or ")),
    };
    operation.description = Some(match operation.description.take() {
        Some(text) if !text.trim().is_empty() => format!("{text}\n\n{access}"),
        _ => access,
    });
}

/// Deprecation (getPet) and stability markers.
fn mark(operation: &mut Operation) {
    let id = operation.operation_id.as_deref().unwrap_or_default();
    if id == "getPet" {
        operation.deprecated = Some(Deprecated::True);
        let sunset = pets::get_pet_sunset().format("%Y-%m-%d").to_string();
        let extensions = ExtensionsBuilder::new()
            .add("x-deprecated-sunset", sunset)
            .build();
        operation
            .extensions
            .get_or_insert_with(Default::default)
            .merge(extensions);
        for response in operation.responses.responses.values_mut() {
            if let RefOr::T(response) = response {
                response.headers.insert(
                    "Deprecation".into(),
                    string_header(
                        "`@<unix seconds>`: when this operation was deprecated (RFC 9745).",
                    ),
                );
                response.headers.insert(
                    "Sunset".into(),
                    string_header("When this operation stops answering (RFC 8594)."),
                );
                response.headers.insert(
                    "Link".into(),
                    string_header("`</v1/pets?id={petId}>; rel=\"successor-version\"`: the operation to use instead."),
                );
            }
        }
    }
    if let Some((_, stability, level)) = STABILITY.iter().find(|(op, _, _)| *op == id) {
        let extensions = ExtensionsBuilder::new()
            .add("x-stability", *stability)
            .add("x-stability-level", *level)
            .build();
        operation
            .extensions
            .get_or_insert_with(Default::default)
            .merge(extensions);
    }
}

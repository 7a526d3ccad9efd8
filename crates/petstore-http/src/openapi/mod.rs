//! The OpenAPI 3.1 document, generated from the code: every operation from the
//! [`endpoints`](crate::routes::endpoints) that serve it, then the responses every operation
//! shares (errors, `X-Request-Id`), deprecation and stability markers added in one place.

use std::sync::OnceLock;

use utoipa::OpenApi;
use utoipa::openapi::extensions::ExtensionsBuilder;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::path::{HttpMethod, Operation, ParameterIn};
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, Http, HttpAuthScheme, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Deprecated, Ref, RefOr};
use utoipa_actix_web::OpenApiFactory;

mod conditions;
mod consistency;
mod events;
mod responses;

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
const STABILITY: [(&str, &str, &str); 9] = [
    ("cancelOrder", "beta", "beta"),
    ("listWebhooks", "beta", "beta"),
    ("createWebhook", "beta", "beta"),
    ("getWebhook", "beta", "beta"),
    ("deleteWebhook", "beta", "beta"),
    ("listWebhookDeliveries", "beta", "beta"),
    ("resendWebhookEvents", "beta", "beta"),
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
                conditions::add_conditions(&method, operation);
                consistency::add_consistency(&method, operation);
                describe_access(operation);
                responses::add_shared_responses(operation);
                mark(operation);
            }
        }
    }
    doc
}

/// What a create answers, and the operations that take the new id: lets clients (and
/// stateful test tools) follow from a new resource to what can be done with it.
const LINKS: [(&str, &str, &str, &[&str]); 6] = [
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
            "getPetPrice",
            "setPetPrice",
            "deletePetPrice",
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
        "/store/checkout",
        "orderId",
        "checkout",
        &["getOrder", "updateOrder", "cancelOrder"],
    ),
    (
        "/store/holds",
        "holdId",
        "placeHold",
        &["getHold", "releaseHold", "checkoutHold"],
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

/// Says in each operation's description which key it needs (from its security requirement),
/// after what its handler's documentation says: a reader of the description alone knows.
fn describe_access(operation: &mut Operation) {
    let access = match required_roles(operation).as_deref() {
        None => return,
        Some([]) => "Needs any valid API key.".to_owned(),
        Some(roles) if roles.iter().any(|r| r == "staff") => {
            "Needs a staff or admin key.".to_owned()
        }
        Some(roles) => {
            let roles = roles.join(" or ");
            let article = if roles.starts_with(['a', 'e', 'i', 'o', 'u']) {
                "an"
            } else {
                "a"
            };
            format!("Needs {article} {roles} key.")
        }
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

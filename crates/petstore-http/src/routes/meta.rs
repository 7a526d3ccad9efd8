//! What the API is: `GET /v1`.

use actix_web::HttpResponse;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::{AnyKey, Auth};

/// The service and API versions.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiInfo {
    /// The service's name.
    name: &'static str,
    /// The service's own version (its release).
    version: &'static str,
    /// The API contract's version, as in the OpenAPI document's `info.version`.
    api_version: &'static str,
}

/// The API contract's version.
pub const API_VERSION: &str = "1.0.0";

/// The service and API versions.
#[utoipa::path(
    get,
    path = "/",
    operation_id = "getApiInfo",
    tag = "meta",
    security(("bearerAuth" = [])),
    responses((status = 200, description = "The service and API versions.", body = ApiInfo))
)]
pub async fn api_info(_caller: Auth<AnyKey>) -> HttpResponse {
    HttpResponse::Ok().json(ApiInfo {
        name: "petstore",
        version: env!("CARGO_PKG_VERSION"),
        api_version: API_VERSION,
    })
}

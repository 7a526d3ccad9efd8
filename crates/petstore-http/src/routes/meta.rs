//! What the API is: `GET /v1`.

use actix_web::{HttpResponse, web};
use petstore_core::Currency;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::{AnyKey, Auth};
use crate::state::AppState;

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
    /// The currency every price and total is in: the shop's, chosen when it was set up.
    currency: Currency,
    /// How many digits its minor unit has: amounts are integers of that unit (2 for EUR, so
    /// 1999 is 19.99 EUR; 0 for JPY).
    currency_exponent: u8,
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
pub async fn api_info(_caller: Auth<AnyKey>, state: web::Data<AppState>) -> HttpResponse {
    let currency = state.currency();
    HttpResponse::Ok().json(ApiInfo {
        name: "petstore",
        version: env!("CARGO_PKG_VERSION"),
        api_version: API_VERSION,
        currency,
        currency_exponent: currency.exponent(),
    })
}

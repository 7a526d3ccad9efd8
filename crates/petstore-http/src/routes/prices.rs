//! `/v1/pets/{petId}/price`: a pet's price, a resource of its own so that replacing a pet
//! never clears it.

use actix_web::{HttpResponse, web};
use petstore_core::{Amount, PetId, PetPrice};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::auth::{AnyKey, Auth, StaffOnly};
use crate::conditional::{IfMatch, IfNoneMatch, changed_response, read_response};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{JsonBody, PathId};
use crate::state::{AppState, Row};

/// A price to set: in minor units of the shop's currency (`GET /v1` tells which).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewPrice {
    /// The unit price, in minor units of the shop's currency: 1999 is 19.99 EUR, 1999 JPY.
    pub amount: Amount,
}

/// Reads a pet's price.
#[utoipa::path(
    get,
    path = "/pets/{petId}/price",
    operation_id = "getPetPrice",
    tag = "pets",
    params(("petId" = PetId, Path, description = "The pet's id.")),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "The pet's price.", body = PetPrice),
        (status = 404, description = "`not_found`: no such pet, or it has no price.", body = ErrorBody),
    )
)]
pub async fn get_pet_price(
    _caller: Auth<AnyKey>,
    state: web::Data<AppState>,
    if_none_match: IfNoneMatch,
    PathId(pet_id): PathId<PetId>,
) -> Result<HttpResponse, ApiError> {
    let price = state
        .read_row(Row::Pet(pet_id), move |shop| shop.prices().get(pet_id))
        .await?;
    Ok(read_response(&price, &if_none_match))
}

/// Sets a pet's price, in the shop's currency. The pet's `price` shows it, and `pet.updated`
/// tells of it; the same amount again changes nothing.
#[utoipa::path(
    put,
    path = "/pets/{petId}/price",
    operation_id = "setPetPrice",
    tag = "pets",
    params(("petId" = PetId, Path, description = "The pet's id.")),
    request_body = NewPrice,
    security(("bearerAuth" = ["staff"])),
    responses((status = 200, description = "The pet's price, set.", body = PetPrice))
)]
pub async fn set_pet_price(
    caller: Auth<StaffOnly>,
    state: web::Data<AppState>,
    if_match: IfMatch,
    PathId(pet_id): PathId<PetId>,
    JsonBody(new): JsonBody<NewPrice>,
) -> Result<HttpResponse, ApiError> {
    let price = state
        .write_row(Some(Row::Pet(pet_id)), move |shop| {
            let condition = |now: &Option<PetPrice>| if_match.allows_if_any(now.as_ref());
            shop.prices().set(caller.0, pet_id, new.amount, condition)
        })
        .await?;
    Ok(changed_response(&price))
}

/// Removes a pet's price. The pet can still be ordered (unpriced), not checked out.
#[utoipa::path(
    delete,
    path = "/pets/{petId}/price",
    operation_id = "deletePetPrice",
    tag = "pets",
    params(("petId" = PetId, Path, description = "The pet's id.")),
    security(("bearerAuth" = ["staff"])),
    responses(
        (status = 204, description = "The pet has no price now."),
        (status = 404, description = "`not_found`: no such pet, or it has no price.", body = ErrorBody),
    )
)]
pub async fn delete_pet_price(
    caller: Auth<StaffOnly>,
    state: web::Data<AppState>,
    if_match: IfMatch,
    PathId(pet_id): PathId<PetId>,
) -> Result<HttpResponse, ApiError> {
    state
        .write_row(Some(Row::Pet(pet_id)), move |shop| {
            let condition = |now: &Option<PetPrice>| if_match.allows_if_any(now.as_ref());
            shop.prices().remove(caller.0, pet_id, condition)
        })
        .await?;
    Ok(HttpResponse::NoContent().finish())
}

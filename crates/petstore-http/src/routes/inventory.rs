//! `/v1/inventory`: stock per pet, its adjustments and its ledger.

use actix_web::{HttpResponse, web};
use petstore_core::{
    Adjustment, InventoryItem, InventoryQuery, InventoryUpdate, Movement, MovementQuery, PetId,
    PetStatus,
};

use crate::auth::{AnyKey, Auth, StaffOnly};
use crate::conditional::{IfMatch, IfNoneMatch, changed_response, read_response};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{JsonBody, PathId};
use crate::pagination::{ListQuery, PageOnly, list_params, page_response};
use crate::state::{AppState, Row};

list_params! {
    /// The parameters of `listInventory`.
    pub struct ListInventory {
        /// Only pets with this status.
        #[serde(
            default,
            deserialize_with = "crate::pagination::text::one",
            skip_serializing_if = "Option::is_none"
        )]
        pub status: Option<PetStatus>,
    }
}

/// Lists every pet's stock, by pet id.
#[utoipa::path(
    get,
    path = "/inventory",
    operation_id = "listInventory",
    tag = "inventory",
    params(ListInventory),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "A page of inventory entries, by pet id.", body = Vec<InventoryItem>,
            headers(("Link" = String, description = "`<…>; rel=\"next\"` when another page follows."))),
    )
)]
pub async fn list_inventory(
    _caller: Auth<AnyKey>,
    state: web::Data<AppState>,
    ListQuery(params): ListQuery<ListInventory>,
) -> Result<HttpResponse, ApiError> {
    let list = InventoryQuery {
        status: params.status,
        after: params.after()?,
        limit: params.page_size(),
        ..InventoryQuery::default()
    };
    let limit = list.limit;
    let page = state.read(move |shop| shop.inventory().list(&list)).await?;
    Ok(page_response("/v1/inventory", &page, limit, params))
}

/// Reads one pet's stock.
#[utoipa::path(
    get,
    path = "/inventory/{petId}",
    operation_id = "getInventoryItem",
    tag = "inventory",
    params(("petId" = PetId, Path, description = "The pet's id.")),
    security(("bearerAuth" = [])),
    responses((status = 200, description = "The pet's stock.", body = InventoryItem))
)]
pub async fn get_inventory_item(
    _caller: Auth<AnyKey>,
    state: web::Data<AppState>,
    if_none_match: IfNoneMatch,
    PathId(pet_id): PathId<PetId>,
) -> Result<HttpResponse, ApiError> {
    let item = state
        .read_row(Row::Pet(pet_id), move |shop| shop.inventory().get(pet_id))
        .await?;
    Ok(read_response(&item, &if_none_match))
}

/// Sets a pet's stock; its status follows the stock rules.
#[utoipa::path(
    patch,
    path = "/inventory/{petId}",
    operation_id = "updateInventory",
    tag = "inventory",
    params(("petId" = PetId, Path, description = "The pet's id.")),
    request_body = InventoryUpdate,
    security(("bearerAuth" = ["staff"])),
    responses((status = 200, description = "The pet's stock, updated.", body = InventoryItem))
)]
pub async fn update_inventory(
    caller: Auth<StaffOnly>,
    state: web::Data<AppState>,
    if_match: IfMatch,
    PathId(pet_id): PathId<PetId>,
    JsonBody(update): JsonBody<InventoryUpdate>,
) -> Result<HttpResponse, ApiError> {
    let item = state
        .write_row(Some(Row::Pet(pet_id)), move |shop| {
            let condition = |now: &InventoryItem| if_match.allows(now);
            shop.inventory()
                .set_stock(caller.0, pet_id, update.quantity, condition)
        })
        .await?;
    Ok(changed_response(&item))
}

/// Adjusts a pet's stock by a number of units, in or out, for a reason: a delivery, a
/// breakage, a count. Its status follows the stock rules, as when stock is set, and the
/// adjustment is a movement of the pet's ledger with its reason.
///
/// `changeFromQuantity` names the stock the adjustment was meant for: another level is
/// `412`, so that retrying an adjustment whose answer was lost cannot make it twice.
#[utoipa::path(
    post,
    path = "/inventory/{petId}/adjustments",
    operation_id = "adjustInventory",
    tag = "inventory",
    params(("petId" = PetId, Path, description = "The pet's id.")),
    request_body = Adjustment,
    security(("bearerAuth" = ["staff"])),
    responses(
        (status = 200, description = "The pet's stock, adjusted.", body = InventoryItem),
        (status = 409, description = "`insufficient_stock`: more units out than are in stock.", body = ErrorBody),
    )
)]
pub async fn adjust_inventory(
    caller: Auth<StaffOnly>,
    state: web::Data<AppState>,
    if_match: IfMatch,
    PathId(pet_id): PathId<PetId>,
    JsonBody(adjustment): JsonBody<Adjustment>,
) -> Result<HttpResponse, ApiError> {
    let item = state
        .write_row(Some(Row::Pet(pet_id)), move |shop| {
            let condition = |now: &InventoryItem| if_match.allows(now);
            shop.inventory()
                .adjust(caller.0, pet_id, adjustment.clone(), condition)
        })
        .await?;
    Ok(changed_response(&item))
}

/// A pet's stock movements, oldest first: every change of its stock since its ledger began,
/// each with its kind, the units moved, the balances after it, the order line or reason it
/// belongs to, who made it and the request that did. A deleted pet keeps its movements.
#[utoipa::path(
    get,
    path = "/inventory/{petId}/movements",
    operation_id = "listStockMovements",
    tag = "inventory",
    params(
        ("petId" = PetId, Path, description = "The pet's id."),
        PageOnly,
    ),
    security(("bearerAuth" = ["staff"])),
    responses(
        (status = 200, description = "A page of movements, oldest first.", body = Vec<Movement>,
            headers(("Link" = String, description = "`<…>; rel=\"next\"` when another page follows."))),
    )
)]
pub async fn list_stock_movements(
    caller: Auth<StaffOnly>,
    state: web::Data<AppState>,
    PathId(pet_id): PathId<PetId>,
    ListQuery(params): ListQuery<PageOnly>,
) -> Result<HttpResponse, ApiError> {
    let list = MovementQuery {
        pet_id,
        after: params.after()?,
        limit: params.page_size(),
    };
    let page = state
        .read(move |shop| shop.inventory().movements(caller.0, &list))
        .await?;
    let path = format!("/v1/inventory/{pet_id}/movements");
    Ok(page_response(&path, &page, list.limit, params))
}

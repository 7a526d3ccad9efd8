//! `/v1/store/orders`.
//!
//! An order belongs to the key that placed it. A customer lists, reads and cancels only its own
//! (another's order is 404, as if it did not exist); staff and admin see all. The domain decides
//! that from the caller (`Caller::order_scope`); these handlers only pass it on.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use actix_web::{HttpResponse, web};
use petstore_core::{NewOrder, Order, OrderId, OrderPatch, OrderQuery, PetId};

use crate::auth::{AnyKey, Auth, StaffOnly};
use crate::conditional::{
    IdempotencyHeader, IfMatch, IfNoneMatch, changed_response, read_response, render_created,
    replay,
};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{JsonBody, PathId, QueryParams};
use crate::pagination::{PageParams, Paging, page_response};
use crate::state::AppState;

/// Lists orders by id.
#[utoipa::path(
    get,
    path = "/store/orders",
    operation_id = "listOrders",
    tag = "store",
    params(
        PageParams,
        ("petId" = Option<PetId>, Query, description = "Only orders for this pet."),
        ("complete" = Option<bool>, Query, description = "Only complete (`true`) or open (`false`) orders."),
    ),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "A page of orders, by id.", body = Vec<Order>,
            headers(("Link" = String, description = "`<…>; rel=\"next\"` when another page follows."))),
    )
)]
pub async fn list_orders(
    caller: Auth<AnyKey>,
    state: web::Data<AppState>,
    mut query: QueryParams,
) -> Result<HttpResponse, ApiError> {
    let paging = Paging::<OrderId>::take(&mut query)?;
    let pet_id = query.parse::<PetId>("petId")?;
    let complete = query.parse_bool("complete")?;
    query.finish()?;
    let mut filters = Vec::new();
    if let Some(pet) = pet_id {
        filters.push(("petId", pet.to_string()));
    }
    if let Some(complete) = complete {
        filters.push(("complete", complete.to_string()));
    }
    let list = OrderQuery {
        pet_id,
        complete,
        after: paging.after,
        limit: paging.limit,
        owner: None,
    };
    let page = state
        .run(move |shop| shop.list_orders(&list, caller.0.order_scope()))
        .await?;
    Ok(page_response(
        "/v1/store/orders",
        &page,
        paging.limit,
        &filters,
    ))
}

/// Places an order: its units leave stock at once.
#[utoipa::path(
    post,
    path = "/store/orders",
    operation_id = "placeOrder",
    tag = "store",
    request_body = NewOrder,
    security(("bearerAuth" = [])),
    responses(
        (status = 201, description = "The order, placed.", body = Order,
            headers(("Location" = String, description = "The new order's URL."))),
        (status = 409, description = "`insufficient_stock`: not enough units; `pet_not_available`: the pet is not for sale.", body = ErrorBody),
        (status = 422, description = "`unknown_pet`: the pet does not exist.", body = ErrorBody),
    )
)]
pub async fn place_order(
    caller: Auth<AnyKey>,
    state: web::Data<AppState>,
    idempotency: IdempotencyHeader,
    JsonBody(new): JsonBody<NewOrder>,
) -> Result<HttpResponse, ApiError> {
    let owner = caller.0.owner();
    let key = idempotency.key(owner, "/v1/store/orders", &new)?;
    // The domain renders the response only when it places the order, never for a replay.
    let placed = Arc::new(AtomicBool::new(false));
    let render = {
        let placed = Arc::clone(&placed);
        move |order: &Order| {
            placed.store(true, Ordering::Relaxed);
            render_created(format!("/v1/store/orders/{}", order.id), order)
        }
    };
    let recorded = state
        .run(move |shop| match key {
            Some(key) => shop.place_order_once(new, Some(owner), &key, render),
            None => shop
                .place_order(new, Some(owner))
                .map(|order| render(&order)),
        })
        .await?;
    if placed.load(Ordering::Relaxed) {
        state.metrics().order_placed();
    }
    Ok(replay(recorded))
}

/// Reads one order.
#[utoipa::path(
    get,
    path = "/store/orders/{orderId}",
    operation_id = "getOrder",
    tag = "store",
    params(("orderId" = OrderId, Path, description = "The order's id.")),
    security(("bearerAuth" = [])),
    responses((status = 200, description = "The order.", body = Order))
)]
pub async fn get_order(
    caller: Auth<AnyKey>,
    state: web::Data<AppState>,
    if_none_match: IfNoneMatch,
    PathId(id): PathId<OrderId>,
) -> Result<HttpResponse, ApiError> {
    let order = state
        .run(move |shop| shop.get_order(id, caller.0.order_scope()))
        .await?;
    Ok(read_response(&order, &if_none_match))
}

/// Sets or clears an order's ship date, or completes it. Completion is final.
#[utoipa::path(
    patch,
    path = "/store/orders/{orderId}",
    operation_id = "updateOrder",
    tag = "store",
    params(("orderId" = OrderId, Path, description = "The order's id.")),
    request_body = OrderPatch,
    security(("bearerAuth" = ["staff"])),
    responses(
        (status = 200, description = "The order, updated.", body = Order),
        (status = 409, description = "`invalid_transition`: a complete order cannot be made open again.", body = ErrorBody),
    )
)]
pub async fn update_order(
    _caller: Auth<StaffOnly>,
    state: web::Data<AppState>,
    if_match: IfMatch,
    PathId(id): PathId<OrderId>,
    JsonBody(patch): JsonBody<OrderPatch>,
) -> Result<HttpResponse, ApiError> {
    let order = state
        .run(move |shop| shop.update_order_if(id, patch, move |now: &Order| if_match.allows(now)))
        .await?;
    Ok(changed_response(&order))
}

/// Cancels an open order: it is removed and its units go back in stock.
#[utoipa::path(
    delete,
    path = "/store/orders/{orderId}",
    operation_id = "cancelOrder",
    tag = "store",
    params(("orderId" = OrderId, Path, description = "The order's id.")),
    security(("bearerAuth" = [])),
    responses(
        (status = 204, description = "The order is cancelled."),
        (status = 409, description = "`order_not_cancellable`: the order is complete.", body = ErrorBody),
    )
)]
pub async fn cancel_order(
    caller: Auth<AnyKey>,
    state: web::Data<AppState>,
    if_match: IfMatch,
    PathId(id): PathId<OrderId>,
) -> Result<HttpResponse, ApiError> {
    let scope = caller.0.order_scope();
    state
        .run(move |shop| shop.cancel_order_if(id, scope, move |now: &Order| if_match.allows(now)))
        .await?;
    Ok(HttpResponse::NoContent().finish())
}

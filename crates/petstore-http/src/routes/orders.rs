//! `/v1/store/orders`.
//!
//! An order belongs to the key that placed it. A customer lists, reads and cancels only its own
//! (another's order is 404, as if it did not exist); staff and admin see all. The domain decides
//! that from the caller (`Caller::order_scope`); these handlers only pass it on.

use actix_web::{HttpResponse, web};
use petstore_core::{
    Idempotent, NewCheckout, NewOrder, Order, OrderId, OrderPatch, OrderQuery, PetId,
};

use crate::auth::{AnyKey, Auth, StaffOnly};
use crate::conditional::{
    IdempotencyHeader, IfMatch, IfNoneMatch, changed_response, created_response, read_response,
};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{JsonBody, PathId};
use crate::pagination::{ListQuery, list_params, page_response};
use crate::routes::{create_once, line_rows};
use crate::state::PetService;
use crate::state::{AppState, Row};

list_params! {
    /// The parameters of `listOrders`.
    pub struct ListOrders {
        /// Only orders for this pet.
        #[serde(
            default,
            deserialize_with = "crate::pagination::text::one",
            skip_serializing_if = "Option::is_none"
        )]
        pub pet_id: Option<PetId>,
        /// Only complete (`true`) or open (`false`) orders.
        #[serde(
            default,
            deserialize_with = "crate::pagination::text::flag",
            skip_serializing_if = "Option::is_none"
        )]
        pub complete: Option<bool>,
    }
}

/// Lists orders by id.
#[utoipa::path(
    get,
    path = "/store/orders",
    operation_id = "listOrders",
    tag = "store",
    params(ListOrders),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "A page of orders, by id.", body = Vec<Order>,
            headers(("Link" = String, description = "`<…>; rel=\"next\"` when another page follows."))),
    )
)]
pub async fn list_orders(
    caller: Auth<AnyKey>,
    state: web::Data<AppState>,
    ListQuery(params): ListQuery<ListOrders>,
) -> Result<HttpResponse, ApiError> {
    let list = OrderQuery {
        pet_id: params.pet_id,
        complete: params.complete,
        newest_first: false,
        after: params.after()?,
        limit: params.page_size(),
        owner: None,
    };
    let page = state
        .read(move |shop| shop.orders().list(caller.0, &list))
        .await?;
    Ok(page_response("/v1/store/orders", &page, list.limit, params))
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
    let key = idempotency.key("/v1/store/orders", &new)?;
    let pet = vec![Row::Pet(new.pet_id)];
    let place = move |shop: &PetService<'_>, once: Option<Idempotent<'_, Order>>| {
        shop.orders().place(caller.0, new.clone(), once)
    };
    let made = create_once(&state, caller.0, pet, key, location, place).await?;
    created_response(made, location)
}

/// Places one order of several lines, all or nothing: every line's pet is locked, each line is
/// judged against the stock the lines before it left, and a refusal names every refused line
/// in `errors`. Each line keeps its pet's price and the order its total; `expectedTotal`
/// refuses the checkout when the lines come to another (a price changed since the basket was
/// shown). As for `placeOrder`, send an `Idempotency-Key`: a retry then cannot check out
/// twice.
#[utoipa::path(
    post,
    path = "/store/checkout",
    operation_id = "checkout",
    tag = "store",
    request_body = NewCheckout,
    security(("bearerAuth" = [])),
    responses(
        (status = 201, description = "The order, placed.", body = Order,
            headers(("Location" = String, description = "The new order's URL."))),
        (status = 409, description = "`insufficient_stock`, `pet_not_available`, `price_missing`: lines were refused, each named in `errors`; `total_mismatch`: the lines come to another total than `expectedTotal`.", body = ErrorBody),
        (status = 422, description = "`unknown_pet`: a line's pet does not exist; `pet_repeated`: two lines name one pet.", body = ErrorBody),
        (status = 503, description = "`upgrade_unfinished`: a checkout of several lines waits for the operator to finish the upgrade.", body = ErrorBody),
    )
)]
pub async fn checkout(
    caller: Auth<AnyKey>,
    state: web::Data<AppState>,
    idempotency: IdempotencyHeader,
    JsonBody(new): JsonBody<NewCheckout>,
) -> Result<HttpResponse, ApiError> {
    let key = idempotency.key("/v1/store/checkout", &new)?;
    let pets = line_rows(&new.lines);
    let checkout = move |shop: &PetService<'_>, once: Option<Idempotent<'_, Order>>| {
        shop.orders().checkout(caller.0, new.clone(), once)
    };
    let made = create_once(&state, caller.0, pets, key, location, checkout).await?;
    created_response(made, location)
}

/// Where an order is.
fn location(order: &Order) -> String {
    format!("/v1/store/orders/{}", order.id)
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
        .read(move |shop| shop.orders().get(caller.0, id))
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
    caller: Auth<StaffOnly>,
    state: web::Data<AppState>,
    if_match: IfMatch,
    PathId(id): PathId<OrderId>,
    JsonBody(patch): JsonBody<OrderPatch>,
) -> Result<HttpResponse, ApiError> {
    let order = state
        .write(move |shop| {
            let condition = |now: &Order| if_match.allows(now);
            shop.orders().update(caller.0, id, patch.clone(), condition)
        })
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
    state
        .write(move |shop| {
            let condition = |now: &Order| if_match.allows(now);
            shop.orders().cancel(caller.0, id, condition)
        })
        .await?;
    Ok(HttpResponse::NoContent().finish())
}

//! `/v1/store/holds`: units set aside for a basket while its shopper pays elsewhere.
//!
//! A hold belongs to the key that placed it, as an order does: a customer reads, releases and
//! checks out only its own (another's is 404), staff any. The domain decides; these handlers
//! pass the caller on.

use actix_web::{HttpResponse, web};
use petstore_core::{Hold, HoldCheckout, HoldId, Idempotent, NewHold, Order};

use crate::auth::{AnyKey, Auth};
use crate::conditional::{IdempotencyHeader, IfNoneMatch, created_response, read_response};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{JsonBody, PathId};
use crate::routes::{create_once, line_rows};
use crate::state::{AppState, PetService};

/// Sets the units of 1 to 50 lines aside for the caller, all or nothing, until the hold is
/// released, checked out or expires (`ttlSeconds`, or the operator's default). The units leave
/// `available` at once; each line is judged as a checkout's, and a refusal names every refused
/// line in `errors`. Send an `Idempotency-Key`: a retry then cannot hold twice.
#[utoipa::path(
    post,
    path = "/store/holds",
    operation_id = "placeHold",
    tag = "store",
    request_body = NewHold,
    security(("bearerAuth" = [])),
    responses(
        (status = 201, description = "The hold, placed.", body = Hold,
            headers(("Location" = String, description = "The new hold's URL."))),
        (status = 409, description = "`insufficient_stock`, `pet_not_available`: lines were refused, each named in `errors`.", body = ErrorBody),
        (status = 422, description = "`unknown_pet`: a line's pet does not exist; `pet_repeated`: two lines name one pet; `hold_too_long`: `ttlSeconds` is beyond the longest life this shop allows.", body = ErrorBody),
        (status = 503, description = "`upgrade_unfinished`: holds wait for the operator to finish the upgrade.", body = ErrorBody),
    )
)]
pub async fn place_hold(
    caller: Auth<AnyKey>,
    state: web::Data<AppState>,
    idempotency: IdempotencyHeader,
    JsonBody(new): JsonBody<NewHold>,
) -> Result<HttpResponse, ApiError> {
    let key = idempotency.key("/v1/store/holds", &new)?;
    let pets = line_rows(&new.lines);
    let place = move |shop: &PetService<'_>, once: Option<Idempotent<'_, Hold>>| {
        shop.holds().place(caller.0, new.clone(), once)
    };
    let made = create_once(&state, caller.0, pets, key, hold_location, place).await?;
    created_response(made, hold_location)
}

/// Where a hold is.
fn hold_location(hold: &Hold) -> String {
    format!("/v1/store/holds/{}", hold.id)
}

/// Reads one hold, active or ended: an ended hold says how (`ended`), and the order it became.
#[utoipa::path(
    get,
    path = "/store/holds/{holdId}",
    operation_id = "getHold",
    tag = "store",
    params(("holdId" = HoldId, Path, description = "The hold's id.")),
    security(("bearerAuth" = [])),
    responses((status = 200, description = "The hold.", body = Hold))
)]
pub async fn get_hold(
    caller: Auth<AnyKey>,
    state: web::Data<AppState>,
    if_none_match: IfNoneMatch,
    PathId(id): PathId<HoldId>,
) -> Result<HttpResponse, ApiError> {
    let hold = state
        .read(move |shop| shop.holds().get(caller.0, id))
        .await?;
    Ok(read_response(&hold, &if_none_match))
}

/// Releases an active hold: its units go back at once.
#[utoipa::path(
    delete,
    path = "/store/holds/{holdId}",
    operation_id = "releaseHold",
    tag = "store",
    params(("holdId" = HoldId, Path, description = "The hold's id.")),
    security(("bearerAuth" = [])),
    responses(
        (status = 204, description = "The hold is released."),
        (status = 409, description = "`hold_ended`: it was released or checked out already; `hold_expired`: its expiry has come.", body = ErrorBody),
    )
)]
pub async fn release_hold(
    caller: Auth<AnyKey>,
    state: web::Data<AppState>,
    PathId(id): PathId<HoldId>,
) -> Result<HttpResponse, ApiError> {
    state
        .write(move |shop| shop.holds().release(caller.0, id))
        .await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Checks out an active hold: one order of its lines, numbered as the hold's, each at its
/// pet's price now, whose units are the hold's. A hold becomes at most one order, whatever the
/// keys; send an `Idempotency-Key` so that a retry answers as the first did.
#[utoipa::path(
    post,
    path = "/store/holds/{holdId}/checkout",
    operation_id = "checkoutHold",
    tag = "store",
    params(("holdId" = HoldId, Path, description = "The hold's id.")),
    request_body = HoldCheckout,
    security(("bearerAuth" = [])),
    responses(
        (status = 201, description = "The order, placed.", body = Order,
            headers(("Location" = String, description = "The new order's URL."))),
        (status = 409, description = "`hold_ended`: released or checked out already; `hold_expired`: its expiry has come; `price_missing`: a line's pet has no price, each named in `errors`; `total_mismatch`: the lines come to another total than `expectedTotal`.", body = ErrorBody),
    )
)]
pub async fn checkout_hold(
    caller: Auth<AnyKey>,
    state: web::Data<AppState>,
    idempotency: IdempotencyHeader,
    PathId(id): PathId<HoldId>,
    JsonBody(terms): JsonBody<HoldCheckout>,
) -> Result<HttpResponse, ApiError> {
    let key = idempotency.key(&format!("/v1/store/holds/{id}/checkout"), &terms)?;
    let check_out = move |shop: &PetService<'_>, once: Option<Idempotent<'_, Order>>| {
        shop.holds().check_out(caller.0, id, terms.clone(), once)
    };
    let made = create_once(&state, caller.0, Vec::new(), key, order_location, check_out).await?;
    created_response(made, order_location)
}

/// Where an order is.
fn order_location(order: &Order) -> String {
    format!("/v1/store/orders/{}", order.id)
}

//! The `/v1` operations. Each handler translates HTTP into one use case call and back.

pub mod categories;
pub mod events;
pub mod holds;
pub mod inventory;
pub mod keys;
pub mod meta;
pub mod orders;
pub mod pets;
pub mod prices;
pub mod webhooks;

use actix_web::HttpResponse;
use actix_web::http::header;

use petstore_core::{Caller, DomainError, IdempotencyKey, Idempotent, Outcome};
use serde::Serialize;

use crate::conditional::{Created, IdempotencyHeader, KeptAnswer};
use crate::endpoint::Endpoint;
use crate::error::ApiError;
use crate::state::{AppState, KeyName, PetService, Row, WriteNames};

pub use crate::endpoint::BASE;

/// Every `/v1` resource with its operations: the router and the OpenAPI document both come
/// from this list.
pub fn endpoints() -> Vec<Endpoint> {
    // actix tries the resources in this order, each at a cost (a string comparison, or a
    // regex for a path with a parameter, and the bookkeeping of an attempt: about 300
    // instructions for a fixed path), so the most requested come first: the catalogue, stock
    // and orders, then staff's and administrators' resources. No two patterns match the same
    // path (tested), so the order changes which is tried first, never which answers.
    vec![
        Endpoint::at("/pets")
            .op(pets::__path_list_pets, pets::list_pets)
            .op(pets::__path_create_pet, pets::create_pet),
        Endpoint::at("/inventory/{petId}")
            .op(
                inventory::__path_get_inventory_item,
                inventory::get_inventory_item,
            )
            .op(
                inventory::__path_update_inventory,
                inventory::update_inventory,
            ),
        Endpoint::at("/store/orders")
            .op(orders::__path_list_orders, orders::list_orders)
            .op(orders::__path_place_order, orders::place_order),
        Endpoint::at("/pets/{petId}")
            .op(pets::__path_get_pet, pets::get_pet)
            .op(pets::__path_replace_pet, pets::replace_pet)
            .op(pets::__path_delete_pet, pets::delete_pet),
        Endpoint::at("/pets/{petId}/price")
            .op(prices::__path_get_pet_price, prices::get_pet_price)
            .op(prices::__path_set_pet_price, prices::set_pet_price)
            .op(prices::__path_delete_pet_price, prices::delete_pet_price),
        Endpoint::at("/inventory").op(inventory::__path_list_inventory, inventory::list_inventory),
        Endpoint::at("/inventory/{petId}/adjustments").op(
            inventory::__path_adjust_inventory,
            inventory::adjust_inventory,
        ),
        Endpoint::at("/inventory/{petId}/movements").op(
            inventory::__path_list_stock_movements,
            inventory::list_stock_movements,
        ),
        Endpoint::at("/store/checkout").op(orders::__path_checkout, orders::checkout),
        Endpoint::at("/store/holds").op(holds::__path_place_hold, holds::place_hold),
        Endpoint::at("/store/holds/{holdId}")
            .op(holds::__path_get_hold, holds::get_hold)
            .op(holds::__path_release_hold, holds::release_hold),
        Endpoint::at("/store/holds/{holdId}/checkout")
            .op(holds::__path_checkout_hold, holds::checkout_hold),
        Endpoint::at("/store/orders/{orderId}")
            .op(orders::__path_get_order, orders::get_order)
            .op(orders::__path_update_order, orders::update_order)
            .op(orders::__path_cancel_order, orders::cancel_order),
        Endpoint::at("/categories")
            .op(
                categories::__path_list_categories,
                categories::list_categories,
            )
            .op(
                categories::__path_create_category,
                categories::create_category,
            ),
        Endpoint::at("/categories/{categoryId}")
            .op(categories::__path_get_category, categories::get_category)
            .op(
                categories::__path_replace_category,
                categories::replace_category,
            )
            .op(
                categories::__path_delete_category,
                categories::delete_category,
            ),
        Endpoint::at("/events").op(events::__path_list_events, events::list_events),
        Endpoint::at("/events/stream").op(events::__path_stream_events, events::stream_events),
        Endpoint::at("/keys")
            .op(keys::__path_list_keys, keys::list_keys)
            .op(keys::__path_create_key, keys::create_key),
        Endpoint::at("/keys/{keyId}")
            .op(keys::__path_get_key, keys::get_key)
            .op(keys::__path_revoke_key, keys::revoke_key),
        Endpoint::at("/webhooks")
            .op(webhooks::__path_list_webhooks, webhooks::list_webhooks)
            .op(webhooks::__path_create_webhook, webhooks::create_webhook),
        Endpoint::at("/webhooks/{webhookId}")
            .op(webhooks::__path_get_webhook, webhooks::get_webhook)
            .op(webhooks::__path_delete_webhook, webhooks::delete_webhook),
        Endpoint::at("/webhooks/{webhookId}/resend").op(
            webhooks::__path_resend_webhook_events,
            webhooks::resend_webhook_events,
        ),
        Endpoint::at("/webhooks/{webhookId}/deliveries").op(
            webhooks::__path_list_webhook_deliveries,
            webhooks::list_webhook_deliveries,
        ),
        Endpoint::at("/").op(meta::__path_api_info, meta::api_info),
    ]
}

/// The rows a write of `lines` names: every line's pet, so that a burst locks them with its
/// other jobs' in one statement.
fn line_rows(lines: &petstore_core::CheckoutLines) -> Vec<Row> {
    lines
        .lines()
        .iter()
        .map(|line| Row::Pet(line.pet_id))
        .collect()
}

/// `201 Created` with the new resource's `Location`.
fn created(location: String, body: &impl serde::Serialize) -> HttpResponse {
    HttpResponse::Created()
        .insert_header((header::LOCATION, location))
        .json(body)
}

/// Runs a create that keeps the client's `Idempotency-Key` (`key`): `create` gets the promise
/// to record its answer, made from what it creates and `location(created)`. The outcome is
/// what was made now, or the answer recorded for an earlier request with the same key
/// (answer it with `conditional::created_response`).
async fn create_once<T: Serialize + Send + 'static>(
    state: &AppState,
    caller: Caller,
    rows: Vec<Row>,
    key: Option<IdempotencyKey>,
    location: fn(&T) -> String,
    mut create: impl for<'s, 'k> FnMut(
        &PetService<'s>,
        Option<Idempotent<'k, T>>,
    ) -> Result<Outcome<T>, DomainError>
    + Send
    + 'static,
) -> Result<Created<T>, ApiError> {
    // The key is named with the write, so a burst looks up every key it holds at once.
    let names = WriteNames {
        rows,
        key: key
            .as_ref()
            .zip(caller.owner())
            .map(|(key, owner)| KeyName {
                owner,
                key: key.key.clone(),
            }),
    };
    let kept = KeptAnswer::default();
    let recording = kept.clone();
    let outcome = state
        .write_row(names, move |shop| {
            let record = |made: &T| recording.record(location(made), made);
            create(
                shop,
                key.clone().map(|key| Idempotent {
                    key,
                    record: &record,
                }),
            )
        })
        .await?;
    Ok(Created::new(outcome, kept))
}

/// Runs a create whose answer is the only place its secret ever appears (a key, a
/// subscription), answered `201` with `answer(created)`'s location and body. It refuses an
/// `Idempotency-Key`: a replay would have to store the secret to show it again, and secrets
/// are never stored.
async fn create_showing_secret<T: Send + 'static, B: Serialize>(
    state: &AppState,
    idempotency: &IdempotencyHeader,
    operation: &str,
    create: impl for<'s> FnMut(&PetService<'s>) -> Result<T, DomainError> + Send + 'static,
    answer: impl FnOnce(T) -> (String, B),
) -> Result<HttpResponse, ApiError> {
    if idempotency.is_present() {
        return Err(ApiError::invalid_parameter(format!(
            "Idempotency-Key: {operation} cannot be replayed, its secret is shown once"
        )));
    }
    let (location, body) = answer(state.write(create).await?);
    Ok(created(location, &body))
}

#[cfg(test)]
mod tests {
    use actix_web::dev::ResourceDef;

    /// The order of [`super::endpoints`] is free only because of this.
    #[test]
    fn no_two_routes_match_one_path() {
        let paths: Vec<&str> = super::endpoints().iter().map(|e| e.path()).collect();
        for path in &paths {
            // A path of this pattern, each parameter filled in.
            let sample: String = path
                .split('/')
                .map(|part| if part.starts_with('{') { "1" } else { part })
                .collect::<Vec<_>>()
                .join("/");
            let matching: Vec<&str> = paths
                .iter()
                .copied()
                .filter(|pattern| ResourceDef::new(*pattern).is_match(&sample))
                .collect();
            assert_eq!(matching, [*path], "{sample}");
        }
    }
}

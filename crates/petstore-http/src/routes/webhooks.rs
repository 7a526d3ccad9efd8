//! `/v1/webhooks`: subscriptions that receive events by signed POST (admin only).

use actix_web::{HttpResponse, web};
use petstore_core::{
    DeliveryAttempt, DeliveryQuery, NewWebhook, Webhook, WebhookId, WebhookQuery, WebhookResend,
    WebhookSecret,
};

use crate::auth::{AdminOnly, Auth, random_bytes};
use crate::conditional::{
    IdempotencyHeader, IfMatch, IfNoneMatch, changed_response, read_response,
};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{JsonBody, PathId};
use crate::pagination::{ListQuery, PageOnly, page_response};
use crate::routes::create_showing_secret;
use crate::state::AppState;
use crate::state::PetService;
use crate::wire::CreatedWebhook;

/// Lists subscriptions, by id. Secrets are never shown.
#[utoipa::path(
    get,
    path = "/webhooks",
    operation_id = "listWebhooks",
    tag = "webhooks",
    params(PageOnly),
    security(("bearerAuth" = ["admin"])),
    responses(
        (status = 200, description = "A page of subscriptions, by id.", body = Vec<Webhook>,
            headers(("Link" = String, description = "`<…>; rel=\"next\"` when another page follows."))),
    )
)]
pub async fn list_webhooks(
    caller: Auth<AdminOnly>,
    state: web::Data<AppState>,
    ListQuery(params): ListQuery<PageOnly>,
) -> Result<HttpResponse, ApiError> {
    let list = WebhookQuery {
        after: params.after()?,
        limit: params.page_size(),
    };
    let page = state
        .read(move |shop| shop.webhooks().list(caller.0, &list))
        .await?;
    Ok(page_response("/v1/webhooks", &page, list.limit, params))
}

/// Subscribes a URL to event types. It receives the matching events recorded from now on,
/// each POSTed as a CloudEvent and signed with the secret this answer shows once.
#[utoipa::path(
    post,
    path = "/webhooks",
    operation_id = "createWebhook",
    tag = "webhooks",
    request_body = NewWebhook,
    security(("bearerAuth" = ["admin"])),
    responses(
        (status = 201, description = "The subscription, with its secret.", body = CreatedWebhook,
            headers(("Location" = String, description = "The new subscription's URL."))),
        (status = 422, description = "`forbidden_target`: the URL's host is a private, loopback or reserved address, and the service does not allow private targets.", body = ErrorBody),
    )
)]
pub async fn create_webhook(
    caller: Auth<AdminOnly>,
    state: web::Data<AppState>,
    idempotency: IdempotencyHeader,
    JsonBody(new): JsonBody<NewWebhook>,
) -> Result<HttpResponse, ApiError> {
    let secret = WebhookSecret::from_random(random_bytes()?);
    let shown = secret.reveal().to_owned();
    let create =
        move |shop: &PetService<'_>| shop.webhooks().create(caller.0, new.clone(), &secret);
    create_showing_secret(&state, &idempotency, "createWebhook", create, |hook| {
        let location = format!("/v1/webhooks/{}", hook.id);
        (location, CreatedWebhook::new(hook, shown))
    })
    .await
}

/// Reads one subscription and where its deliveries stand (never its secret).
#[utoipa::path(
    get,
    path = "/webhooks/{webhookId}",
    operation_id = "getWebhook",
    tag = "webhooks",
    params(("webhookId" = WebhookId, Path, description = "The subscription's id.")),
    security(("bearerAuth" = ["admin"])),
    responses((status = 200, description = "The subscription.", body = Webhook))
)]
pub async fn get_webhook(
    caller: Auth<AdminOnly>,
    state: web::Data<AppState>,
    if_none_match: IfNoneMatch,
    PathId(id): PathId<WebhookId>,
) -> Result<HttpResponse, ApiError> {
    let webhook = state
        .read(move |shop| shop.webhooks().get(caller.0, id))
        .await?;
    Ok(read_response(&webhook, &if_none_match))
}

/// Ends a subscription: nothing more is sent to it, and its delivery attempts are forgotten.
#[utoipa::path(
    delete,
    path = "/webhooks/{webhookId}",
    operation_id = "deleteWebhook",
    tag = "webhooks",
    params(("webhookId" = WebhookId, Path, description = "The subscription's id.")),
    security(("bearerAuth" = ["admin"])),
    responses((status = 204, description = "The subscription is gone."))
)]
pub async fn delete_webhook(
    caller: Auth<AdminOnly>,
    state: web::Data<AppState>,
    if_match: IfMatch,
    PathId(id): PathId<WebhookId>,
) -> Result<HttpResponse, ApiError> {
    state
        .write(move |shop| {
            let condition = |now: &Webhook| if_match.allows(now);
            shop.webhooks().delete(caller.0, id, condition)
        })
        .await?;
    Ok(HttpResponse::NoContent().finish())
}

/// A subscription's delivery attempts, oldest first: which event, which attempt, what the
/// receiver answered or why it could not be reached, and when the next attempt is due.
#[utoipa::path(
    get,
    path = "/webhooks/{webhookId}/deliveries",
    operation_id = "listWebhookDeliveries",
    tag = "webhooks",
    params(
        ("webhookId" = WebhookId, Path, description = "The subscription's id."),
        PageOnly,
    ),
    security(("bearerAuth" = ["admin"])),
    responses(
        (status = 200, description = "A page of attempts, oldest first.", body = Vec<DeliveryAttempt>,
            headers(("Link" = String, description = "`<…>; rel=\"next\"` when another page follows."))),
    )
)]
pub async fn list_webhook_deliveries(
    caller: Auth<AdminOnly>,
    state: web::Data<AppState>,
    PathId(id): PathId<WebhookId>,
    ListQuery(params): ListQuery<PageOnly>,
) -> Result<HttpResponse, ApiError> {
    let list = DeliveryQuery {
        after: params.after()?,
        limit: params.page_size(),
    };
    let page = state
        .read(move |shop| shop.webhooks().deliveries(caller.0, id, &list))
        .await?;
    let path = format!("/v1/webhooks/{id}/deliveries");
    Ok(page_response(&path, &page, list.limit, params))
}

/// Sends a subscription's events again, in order, from an event id on.
///
/// For a receiver that lost what it had. The subscription's cursor goes back to just before
/// that event and any retry delay is dropped; a delivery run in progress stops at its next
/// record, and the next run starts from the new cursor. The id may not be after the first
/// event the subscription is still owed: a resend never skips events.
#[utoipa::path(
    post,
    path = "/webhooks/{webhookId}/resend",
    operation_id = "resendWebhookEvents",
    tag = "webhooks",
    params(("webhookId" = WebhookId, Path, description = "The subscription's id.")),
    request_body = WebhookResend,
    security(("bearerAuth" = ["admin"])),
    responses(
        (status = 200, description = "The subscription, its cursor moved back.", body = Webhook),
        (status = 409, description = "`invalid_transition`: `fromEventId` is after the first event the subscription is still owed.", body = ErrorBody),
    )
)]
pub async fn resend_webhook_events(
    caller: Auth<AdminOnly>,
    state: web::Data<AppState>,
    if_match: IfMatch,
    PathId(id): PathId<WebhookId>,
    JsonBody(resend): JsonBody<WebhookResend>,
) -> Result<HttpResponse, ApiError> {
    let webhook = state
        .write(move |shop| {
            let condition = |now: &Webhook| if_match.allows(now);
            shop.webhooks()
                .resend(caller.0, id, resend.from_event_id, condition)
        })
        .await?;
    Ok(changed_response(&webhook))
}

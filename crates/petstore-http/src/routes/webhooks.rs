//! `/v1/webhooks`: subscriptions that receive events by signed POST (admin only).

use actix_web::{HttpResponse, web};
use chrono::{DateTime, Utc};
use petstore_core::{
    DeliveryAttempt, DeliveryQuery, DeliveryState, EventTypes, NewWebhook, Webhook, WebhookId,
    WebhookQuery, WebhookSecret, WebhookUrl,
};
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::{AdminOnly, Auth, random_bytes};
use crate::conditional::{IdempotencyHeader, IfMatch, IfNoneMatch, read_response};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{JsonBody, PathId};
use crate::pagination::{ListQuery, PageOnly, page_response};
use crate::routes::created;
use crate::state::AppState;

/// A subscription just created: the one answer that shows its secret.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedWebhook {
    /// Its id.
    id: WebhookId,
    /// Where events are POSTed.
    url: WebhookUrl,
    /// Which events it receives.
    events: EventTypes,
    /// When it was created.
    created_at: DateTime<Utc>,
    /// Where its deliveries stand.
    delivery: DeliveryState,
    /// The signing secret (`whsec_…`), for verifying `webhook-signature` the Standard
    /// Webhooks way. Shown this once.
    secret: String,
}

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
    if idempotency.is_present() {
        // As for keys: a replay would show the secret a second time.
        return Err(ApiError::invalid_parameter(
            "Idempotency-Key: createWebhook cannot be replayed, its secret is shown once",
        ));
    }
    let secret = WebhookSecret::from_random(random_bytes()?);
    let shown = secret.reveal().to_owned();
    let webhook = state
        .run(move |shop| shop.webhooks().create(caller.0, new, &secret))
        .await?;
    let body = CreatedWebhook {
        id: webhook.id,
        url: webhook.url,
        events: webhook.events,
        created_at: webhook.created_at,
        delivery: webhook.delivery,
        secret: shown,
    };
    Ok(created(format!("/v1/webhooks/{}", body.id), &body))
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
        .run(move |shop| {
            let condition = move |now: &Webhook| if_match.allows(now);
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

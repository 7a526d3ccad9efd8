//! `/v1/keys`: API keys (admin only).

use actix_web::{HttpResponse, web};
use petstore_core::{ApiKey, KeyId, KeyQuery, NewApiKey};

use crate::auth::{AdminOnly, Auth, generate_secret, key_revoked, log_key_created};
use crate::conditional::{IdempotencyHeader, IfMatch, IfNoneMatch, read_response};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{JsonBody, PathId};
use crate::pagination::{ListQuery, PageOnly, page_response};
use crate::routes::create_showing_secret;
use crate::state::AppState;
use crate::state::PetService;
use crate::wire::CreatedApiKey;

/// Lists keys, revoked ones included, by id. Secrets are never shown.
#[utoipa::path(
    get,
    path = "/keys",
    operation_id = "listKeys",
    tag = "keys",
    params(PageOnly),
    security(("bearerAuth" = ["admin"])),
    responses(
        (status = 200, description = "A page of keys, by id.", body = Vec<ApiKey>,
            headers(("Link" = String, description = "`<…>; rel=\"next\"` when another page follows."))),
    )
)]
pub async fn list_keys(
    caller: Auth<AdminOnly>,
    state: web::Data<AppState>,
    ListQuery(params): ListQuery<PageOnly>,
) -> Result<HttpResponse, ApiError> {
    let list = KeyQuery {
        after: params.after()?,
        limit: params.page_size(),
    };
    let page = state
        .read(move |shop| shop.keys().list(caller.0, &list))
        .await?;
    Ok(page_response("/v1/keys", &page, list.limit, params))
}

/// Creates a key. The answer is the only place its secret ever appears.
#[utoipa::path(
    post,
    path = "/keys",
    operation_id = "createKey",
    tag = "keys",
    request_body = NewApiKey,
    security(("bearerAuth" = ["admin"])),
    responses(
        (status = 201, description = "The key, with its secret.", body = CreatedApiKey,
            headers(("Location" = String, description = "The new key's URL."))),
    )
)]
pub async fn create_key(
    caller: Auth<AdminOnly>,
    state: web::Data<AppState>,
    idempotency: IdempotencyHeader,
    JsonBody(new): JsonBody<NewApiKey>,
) -> Result<HttpResponse, ApiError> {
    let secret = generate_secret()?;
    let shown = secret.reveal().to_owned();
    let create = move |shop: &PetService<'_>| shop.keys().create(caller.0, new.clone(), &secret);
    create_showing_secret(&state, &idempotency, "createKey", create, |key| {
        log_key_created(&key, caller.0);
        (
            format!("/v1/keys/{}", key.id),
            CreatedApiKey::new(key, shown),
        )
    })
    .await
}

/// Reads one key (never its secret).
#[utoipa::path(
    get,
    path = "/keys/{keyId}",
    operation_id = "getKey",
    tag = "keys",
    params(("keyId" = KeyId, Path, description = "The key's id.")),
    security(("bearerAuth" = ["admin"])),
    responses((status = 200, description = "The key.", body = ApiKey))
)]
pub async fn get_key(
    caller: Auth<AdminOnly>,
    state: web::Data<AppState>,
    if_none_match: IfNoneMatch,
    PathId(id): PathId<KeyId>,
) -> Result<HttpResponse, ApiError> {
    let key = state
        .read(move |shop| shop.keys().get(caller.0, id))
        .await?;
    Ok(read_response(&key, &if_none_match))
}

/// Revokes a key: it authenticates nothing from then on, and stays listed.
#[utoipa::path(
    delete,
    path = "/keys/{keyId}",
    operation_id = "revokeKey",
    tag = "keys",
    params(("keyId" = KeyId, Path, description = "The key's id.")),
    security(("bearerAuth" = ["admin"])),
    responses(
        (status = 204, description = "The key is revoked."),
        (status = 409, description = "`invalid_transition`: a key cannot revoke itself.", body = ErrorBody),
    )
)]
pub async fn revoke_key(
    caller: Auth<AdminOnly>,
    state: web::Data<AppState>,
    if_match: IfMatch,
    PathId(id): PathId<KeyId>,
) -> Result<HttpResponse, ApiError> {
    state
        .write(move |shop| {
            let condition = |now: &ApiKey| if_match.allows(now);
            shop.keys().revoke(caller.0, id, condition)
        })
        .await?;
    key_revoked(&state, id, caller.0);
    Ok(HttpResponse::NoContent().finish())
}

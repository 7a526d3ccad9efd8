//! `/v1/categories`.

use actix_web::{HttpResponse, web};
use petstore_core::{Category, CategoryId, CategoryQuery, Idempotent, NewCategory};

use crate::auth::{AnyKey, Auth, StaffOnly};
use crate::conditional::{
    IdempotencyHeader, IfMatch, IfNoneMatch, changed_response, created_response, read_response,
};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{JsonBody, PathId};
use crate::pagination::{ListQuery, PageOnly, page_response};
use crate::routes::create_once;
use crate::state::AppState;
use crate::state::PetService;

/// Lists categories by id.
#[utoipa::path(
    get,
    path = "/categories",
    operation_id = "listCategories",
    tag = "categories",
    params(PageOnly),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "A page of categories, by id.", body = Vec<Category>,
            headers(("Link" = String, description = "`<…>; rel=\"next\"` when another page follows."))),
    )
)]
pub async fn list_categories(
    _caller: Auth<AnyKey>,
    state: web::Data<AppState>,
    ListQuery(params): ListQuery<PageOnly>,
) -> Result<HttpResponse, ApiError> {
    let list = CategoryQuery {
        after: params.after()?,
        limit: params.page_size(),
    };
    let page = state
        .read(move |shop| shop.categories().list(&list))
        .await?;
    Ok(page_response("/v1/categories", &page, list.limit, params))
}

/// Creates a category; names are unique regardless of case.
#[utoipa::path(
    post,
    path = "/categories",
    operation_id = "createCategory",
    tag = "categories",
    request_body = NewCategory,
    security(("bearerAuth" = ["staff"])),
    responses(
        (status = 201, description = "The category, created.", body = Category,
            headers(("Location" = String, description = "The new category's URL."))),
        (status = 409, description = "`category_exists`: the name is taken.", body = ErrorBody),
    )
)]
pub async fn create_category(
    caller: Auth<StaffOnly>,
    state: web::Data<AppState>,
    idempotency: IdempotencyHeader,
    JsonBody(new): JsonBody<NewCategory>,
) -> Result<HttpResponse, ApiError> {
    let key = idempotency.key("/v1/categories", &new)?;
    let create = move |shop: &PetService<'_>, once: Option<Idempotent<'_, Category>>| {
        shop.categories().create(caller.0, new.clone(), once)
    };
    let made = create_once(&state, caller.0, Vec::new(), key, location, create).await?;
    created_response(made, location)
}

/// Where a category is.
fn location(category: &Category) -> String {
    format!("/v1/categories/{}", category.id)
}

/// Reads one category.
#[utoipa::path(
    get,
    path = "/categories/{categoryId}",
    operation_id = "getCategory",
    tag = "categories",
    params(("categoryId" = CategoryId, Path, description = "The category's id.")),
    security(("bearerAuth" = [])),
    responses((status = 200, description = "The category.", body = Category))
)]
pub async fn get_category(
    _caller: Auth<AnyKey>,
    state: web::Data<AppState>,
    if_none_match: IfNoneMatch,
    PathId(id): PathId<CategoryId>,
) -> Result<HttpResponse, ApiError> {
    let category = state.read(move |shop| shop.categories().get(id)).await?;
    Ok(read_response(&category, &if_none_match))
}

/// Replaces a category's name and description.
#[utoipa::path(
    put,
    path = "/categories/{categoryId}",
    operation_id = "replaceCategory",
    tag = "categories",
    params(("categoryId" = CategoryId, Path, description = "The category's id.")),
    request_body = NewCategory,
    security(("bearerAuth" = ["staff"])),
    responses(
        (status = 200, description = "The category, replaced.", body = Category),
        (status = 409, description = "`category_exists`: another category has the name.", body = ErrorBody),
    )
)]
pub async fn replace_category(
    caller: Auth<StaffOnly>,
    state: web::Data<AppState>,
    if_match: IfMatch,
    PathId(id): PathId<CategoryId>,
    JsonBody(new): JsonBody<NewCategory>,
) -> Result<HttpResponse, ApiError> {
    let category = state
        .write(move |shop| {
            let condition = |now: &Category| if_match.allows(now);
            shop.categories()
                .replace(caller.0, id, new.clone(), condition)
        })
        .await?;
    Ok(changed_response(&category))
}

/// Deletes a category no pet belongs to.
#[utoipa::path(
    delete,
    path = "/categories/{categoryId}",
    operation_id = "deleteCategory",
    tag = "categories",
    params(("categoryId" = CategoryId, Path, description = "The category's id.")),
    security(("bearerAuth" = ["staff"])),
    responses(
        (status = 204, description = "The category is gone."),
        (status = 409, description = "`category_in_use`: pets still belong to it.", body = ErrorBody),
    )
)]
pub async fn delete_category(
    caller: Auth<StaffOnly>,
    state: web::Data<AppState>,
    if_match: IfMatch,
    PathId(id): PathId<CategoryId>,
) -> Result<HttpResponse, ApiError> {
    state
        .write(move |shop| {
            let condition = |now: &Category| if_match.allows(now);
            shop.categories().delete(caller.0, id, condition)
        })
        .await?;
    Ok(HttpResponse::NoContent().finish())
}

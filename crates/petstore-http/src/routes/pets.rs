//! `/v1/pets`: the catalogue.

use actix_web::http::StatusCode;
use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};
use actix_web::{HttpResponse, ResponseError, web};
use chrono::{DateTime, TimeZone, Utc};
use petstore_core::{CategoryId, Idempotent, NewPet, Pet, PetId, PetQuery, PetStatus};

use crate::auth::{AnyKey, Auth, StaffOnly};
use crate::conditional::{
    IdempotencyHeader, IfMatch, IfNoneMatch, changed_response, created_response, read_response,
};
use crate::error::{ApiError, ErrorBody, ErrorCode};
use crate::extract::{JsonBody, PathId};
use crate::pagination::{ListQuery, list_params, page_response};
use crate::routes::create_once;
use crate::state::PetService;
use crate::state::{AppState, Row};

list_params! {
    /// The parameters of `listPets`; `PetQuery::new` bounds them.
    pub struct ListPets {
        /// Only pets with this status.
        #[serde(
            default,
            deserialize_with = "crate::pagination::text::one",
            skip_serializing_if = "Option::is_none"
        )]
        pub status: Option<PetStatus>,
        /// Only pets in this category.
        #[serde(
            default,
            deserialize_with = "crate::pagination::text::one",
            skip_serializing_if = "Option::is_none"
        )]
        pub category_id: Option<CategoryId>,
        /// Only pets whose name contains this text, ignoring case; no name has a control character.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[param(max_length = 100, pattern = r"^[^\x00-\x1F\x7F-\x9F]*$")]
        pub name: Option<String>,
        /// Only these pets (repeat the parameter for several).
        #[serde(
            default,
            deserialize_with = "crate::pagination::text::all",
            skip_serializing_if = "Vec::is_empty"
        )]
        #[param(value_type = Option<Vec<PetId>>, max_items = 100, style = Form, explode)]
        pub id: Vec<PetId>,
    }
}

/// Lists pets by id, filtered.
#[utoipa::path(
    get,
    path = "/pets",
    operation_id = "listPets",
    tag = "pets",
    params(ListPets),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "A page of pets, by id. A `Link` header points to the next page when there is one.", body = Vec<Pet>,
            headers(("Link" = String, description = "`<…>; rel=\"next\"` when another page follows."))),
    )
)]
pub async fn list_pets(
    _caller: Auth<AnyKey>,
    state: web::Data<AppState>,
    ListQuery(params): ListQuery<ListPets>,
) -> Result<HttpResponse, ApiError> {
    let pet_query = PetQuery::new(
        params.status,
        params.category_id,
        params.name.clone(),
        params.id.clone(),
    )
    .map_err(|e| ApiError::invalid_parameter(e.to_string()))?
    .page(params.after()?, params.page_size());
    let limit = pet_query.limit;
    let page = state.read(move |shop| shop.pets().list(&pet_query)).await?;
    Ok(page_response("/v1/pets", &page, limit, params))
}

/// Adds a pet to the catalogue, with no stock.
#[utoipa::path(
    post,
    path = "/pets",
    operation_id = "createPet",
    tag = "pets",
    request_body = NewPet,
    security(("bearerAuth" = ["staff"])),
    responses(
        (status = 201, description = "The pet, created.", body = Pet,
            headers(("Location" = String, description = "The new pet's URL."))),
        (status = 422, description = "`unknown_category`: the category does not exist.", body = ErrorBody),
    )
)]
pub async fn create_pet(
    caller: Auth<StaffOnly>,
    state: web::Data<AppState>,
    idempotency: IdempotencyHeader,
    JsonBody(new): JsonBody<NewPet>,
) -> Result<HttpResponse, ApiError> {
    let key = idempotency.key("/v1/pets", &new)?;
    let create = move |shop: &PetService<'_>, once: Option<Idempotent<'_, Pet>>| {
        shop.pets().create(caller.0, new.clone(), once)
    };
    let made = create_once(&state, caller.0, Vec::new(), key, location, create).await?;
    created_response(made, location)
}

/// Where a pet is.
fn location(pet: &Pet) -> String {
    format!("/v1/pets/{}", pet.id)
}

/// When `getPet` was deprecated in favour of `listPets?id=`.
pub fn get_pet_deprecated_at() -> DateTime<Utc> {
    midnight_utc(2026, 11, 22)
}

/// When `getPet` stops answering (410 `gone` from then on).
pub fn get_pet_sunset() -> DateTime<Utc> {
    midnight_utc(2030, 12, 5)
}

/// Midnight UTC of a calendar day written in this file.
#[expect(
    clippy::expect_used,
    reason = "the days are literals of this file, checked by its tests; there is no input"
)]
fn midnight_utc(year: i32, month: u32, day: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(year, month, day, 0, 0, 0)
        .single()
        .expect("a valid calendar day")
}

/// Reads one pet. Deprecated: use `GET /v1/pets?id={petId}`.
#[utoipa::path(
    get,
    path = "/pets/{petId}",
    operation_id = "getPet",
    tag = "pets",
    params(("petId" = PetId, Path, description = "The pet's id.")),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "The pet.", body = Pet),
        (status = 410, description = "`gone`: this operation reached its sunset; use `listPets?id=`.", body = ErrorBody),
    )
)]
pub async fn get_pet(
    caller: Result<Auth<AnyKey>, ApiError>,
    state: web::Data<AppState>,
    if_none_match: IfNoneMatch,
    id: Result<PathId<PetId>, ApiError>,
) -> HttpResponse {
    // The extractions are taken as results so that even a refusal carries the headers.
    let pet_id = id.as_ref().ok().map(|PathId(id)| *id);
    let result = match (caller, id) {
        (Err(error), _) | (_, Err(error)) => Err(error),
        (Ok(_), Ok(_)) if state.clock().now() >= get_pet_sunset() => Err(ApiError::new(
            StatusCode::GONE,
            ErrorCode::Gone,
            "getPet was retired on 2030-12-05; use GET /v1/pets?id={petId}",
        )),
        (Ok(_), Ok(PathId(id))) => {
            state
                .read_row(Row::Pet(id), move |shop| shop.pets().get(id))
                .await
        }
    };
    let mut response = match result {
        Ok(pet) => read_response(&pet, &if_none_match),
        Err(error) => error.error_response(),
    };
    add_deprecation_headers(response.headers_mut(), pet_id);
    response
}

/// `Deprecation` (RFC 9745), `Sunset` (RFC 8594) and the successor's `Link`, on every
/// response of `getPet`, errors included.
fn add_deprecation_headers(headers: &mut HeaderMap, pet_id: Option<PetId>) {
    let mut set = |name: &'static str, value: String| {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(HeaderName::from_static(name), value);
        }
    };
    set(
        "deprecation",
        format!("@{}", get_pet_deprecated_at().timestamp()),
    );
    set(
        "sunset",
        get_pet_sunset()
            .format("%a, %d %b %Y %H:%M:%S GMT")
            .to_string(),
    );
    if let Some(id) = pet_id {
        set(
            "link",
            format!("</v1/pets?id={id}>; rel=\"successor-version\""),
        );
    }
}

/// Replaces a pet's name, category and status. A status set here is a staff decision and
/// is recorded as a status change.
#[utoipa::path(
    put,
    path = "/pets/{petId}",
    operation_id = "replacePet",
    tag = "pets",
    params(("petId" = PetId, Path, description = "The pet's id.")),
    request_body = NewPet,
    security(("bearerAuth" = ["staff"])),
    responses(
        (status = 200, description = "The pet, replaced.", body = Pet),
        (status = 422, description = "`unknown_category`: the category does not exist.", body = ErrorBody),
    )
)]
pub async fn replace_pet(
    caller: Auth<StaffOnly>,
    state: web::Data<AppState>,
    if_match: IfMatch,
    PathId(id): PathId<PetId>,
    JsonBody(new): JsonBody<NewPet>,
) -> Result<HttpResponse, ApiError> {
    let pet = state
        .write(move |shop| {
            let condition = |now: &Pet| if_match.allows(now);
            shop.pets().replace(caller.0, id, new.clone(), condition)
        })
        .await?;
    Ok(changed_response(&pet))
}

/// Removes a pet and its inventory entry.
#[utoipa::path(
    delete,
    path = "/pets/{petId}",
    operation_id = "deletePet",
    tag = "pets",
    params(("petId" = PetId, Path, description = "The pet's id.")),
    security(("bearerAuth" = ["staff"])),
    responses(
        (status = 204, description = "The pet is gone."),
        (status = 409, description = "`pet_has_open_orders`: complete or cancel its orders first.", body = ErrorBody),
    )
)]
pub async fn delete_pet(
    caller: Auth<StaffOnly>,
    state: web::Data<AppState>,
    if_match: IfMatch,
    PathId(id): PathId<PetId>,
) -> Result<HttpResponse, ApiError> {
    state
        .write(move |shop| {
            let condition = |now: &Pet| if_match.allows(now);
            shop.pets().delete(caller.0, id, condition)
        })
        .await?;
    Ok(HttpResponse::NoContent().finish())
}

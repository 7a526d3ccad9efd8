//! The stock page: every pet's units, each set in place (htmx swaps the one row), refused
//! when someone changed it since the page was read.

use actix_web::{HttpRequest, web};
use maud::{Markup, PreEscaped, html};
use petstore_core::{InventoryItem, InventoryQuery, PageSize, PetId, PetQuery, Stock};
use serde::Deserialize;

use super::catalogue::pet_names;
use super::refused::{Refusal, alert};
use super::reply::{
    Answer, html, is_htmx, parsed, parsed_if_given, see_other_saying, unchanged, units,
};
use super::session::{Staff, Submitted};
use super::view::{done, page, token_field, version_field};
use crate::error::ApiError;
use crate::state::AppState;

/// The page's position, as its "next page" link sends it.
#[derive(Debug, Default, Deserialize)]
pub(super) struct StockPosition {
    #[serde(default)]
    after: String,
}

/// A stock entry with its pet's name.
struct Line {
    item: InventoryItem,
    name: String,
}

/// The entries after `after` (a page), each with its pet's name.
async fn lines(
    state: &AppState,
    after: Option<PetId>,
) -> Result<(Vec<Line>, Option<i64>), ApiError> {
    state
        .read(move |shop| {
            let page = shop.inventory().list(&InventoryQuery {
                after,
                limit: PageSize::MAX_PAGE,
                ..InventoryQuery::default()
            })?;
            // Every pet has one stock entry, so the same range of pets holds their names: a
            // range read, cheaper than looking 100 ids up.
            let same_range =
                PetQuery::new(None, None, None, Vec::new())?.page(after, PageSize::MAX_PAGE);
            let mut names = pet_names(shop, &same_range)?;
            let lines = page
                .items
                .into_iter()
                .map(|item| Line {
                    name: names.remove(&item.pet_id).unwrap_or_default(),
                    item,
                })
                .collect();
            Ok((lines, page.next_after))
        })
        .await
}

/// `GET /console/stock`.
pub(super) async fn stock_page(
    staff: Staff,
    state: web::Data<AppState>,
    position: web::Query<StockPosition>,
) -> Answer {
    let after = parsed_if_given(&position.after)?;
    stock_answer(&staff, &state, after, None).await
}

async fn stock_answer(
    staff: &Staff,
    state: &AppState,
    after: Option<PetId>,
    refused: Option<(PetId, Refusal)>,
) -> Answer {
    let (lines, next) = lines(state, after).await?;
    let outcome = |id: PetId| match &refused {
        Some((at, refusal)) if *at == id => Some(Err(refusal.error())),
        _ => None,
    };
    let body = html! {
        table.cards {
            caption.sr-only { "Stock per pet" }
            thead { tr { th scope="col" { "Pet" } th scope="col" { "Status" } th scope="col" { "Units" } th scope="col" { "Result" } } }
            tbody {
                @for line in &lines { (row(staff, line, outcome(line.item.pet_id))) }
            }
        }
        @if lines.is_empty() { p { "No pet yet: add one on the Pets page." } }
        @if let Some(next) = next { p { a href={ "/console/stock?after=" (next) } { "Next page" } } }
    };
    let status = refused
        .as_ref()
        .map_or(actix_web::http::StatusCode::OK, |(_, refusal)| {
            refusal.error().status()
        });
    Ok(html(status, page(staff, "/console/stock", "Stock", body)))
}

/// One pet's row: its units, a form to set them, and what the last change gave.
fn row(staff: &Staff, line: &Line, outcome: Option<Result<(), &ApiError>>) -> Markup {
    // An id is digits: written as they are, not escaped (100 rows, five places each).
    let id = line.item.pet_id.get();
    let action = PreEscaped(format!("/console/stock/{id}"));
    let field = PreEscaped(format!("units-{id}"));
    html! {
        tr #{ "stock-" (id) } {
            td data-label="Pet" { a href={ "/console/pets/" (id) } { (line.name) } }
            td data-label="Status" { (line.item.status.as_str()) }
            td data-label="Units" {
                form.inline method="post" action=(action) hx-post=(action) hx-target="closest tr" hx-swap="outerHTML" {
                    (token_field(staff))
                    (version_field(&line.item))
                    label.sr-only for=(field) { "Units of " (line.name) }
                    input id=(field) name="quantity" type="number" min="0" max="1000000" required value=(line.item.quantity.get());
                    button.plain type="submit" { "Set" }
                }
            }
            td data-label="Result" {
                @match outcome {
                    Some(Ok(())) => (done("Saved.")),
                    Some(Err(error)) => (alert(error, &line.name)),
                    None => {},
                }
            }
        }
    }
}

/// The stock form's fields.
#[derive(Debug, Deserialize)]
pub(super) struct StockFields {
    pub(super) quantity: String,
    #[serde(default)]
    version: String,
}

/// Sets pet `id`'s units as `fields` ask, if nobody changed them since the form was read.
pub(super) async fn set_level(
    state: &AppState,
    caller: petstore_core::Caller,
    id: PetId,
    fields: &StockFields,
) -> Result<InventoryItem, ApiError> {
    // An integer out of range and text that is none are refused alike, as the API does.
    let level = fields.quantity.trim().parse::<i64>().unwrap_or(-1);
    let stock = Stock::settable(level).map_err(petstore_core::DomainError::from)?;
    let condition = unchanged::<InventoryItem>(fields.version.clone());
    state
        .write(move |shop| {
            shop.inventory()
                .set_stock(caller, id, stock, condition.clone())
        })
        .await
}

/// `POST /console/stock/{petId}`: sets the units, if nobody changed them since the form was
/// read. htmx gets the row back; a page without script, the whole page.
pub(super) async fn set_stock(
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Submitted<StockFields>,
) -> Answer {
    let Submitted { staff, fields } = form;
    let id: PetId = parsed(&id)?;
    let set = set_level(&state, staff.caller(), id, &fields).await;
    if !is_htmx(&req) {
        return match set {
            Ok(item) => {
                let pet = state.read(move |shop| shop.pets().get(id)).await?;
                let said = format!(
                    "Set the stock of {} to {}.",
                    pet.name.as_str(),
                    units(item.quantity.get())
                );
                Ok(see_other_saying("/console/stock", &said))
            }
            Err(error) => stock_answer(&staff, &state, None, Some((id, error.into()))).await,
        };
    }
    // The row as it is now, whatever happened: after a refusal, the units someone else set.
    let item = state
        .read(move |shop| {
            let item = shop.inventory().get(id)?;
            let pet = shop.pets().get(id)?;
            Ok(Line {
                item,
                name: pet.name.as_str().to_owned(),
            })
        })
        .await?;
    let status = set
        .as_ref()
        .map_or_else(ApiError::status, |_| actix_web::http::StatusCode::OK);
    Ok(html(
        status,
        row(&staff, &item, Some(set.as_ref().map(|_| ()))),
    ))
}

//! The stock page: the units of the pets its filter finds, each set in place (htmx swaps the
//! one row), refused when someone changed it since the page was read.

use actix_web::{HttpRequest, web};
use maud::{Markup, PreEscaped, html};
use petstore_core::{Category, DomainError, InventoryItem, InventoryQuery, PetId, PetSort, Stock};
use serde::Deserialize;

use super::catalogue::{all_categories, pet_names};
use super::lists::{Asked, LOW_AT, ListFilter, Position, level, low_at, placed};
use super::pager::{Place, pager};
use super::refused::{Refusal, alert};
use super::reply::{
    Answer, html, parsed, see_other_saying, status_of, unchanged, units, wants_row,
};
use super::session::Submitted;
use super::view::{done, page, token_field, version_field};
use super::visitor::{Staff, Visit, Visitor};
use crate::error::ApiError;
use crate::state::{AppState, PetService};

/// A stock entry with its pet's name.
pub(super) struct Line {
    pub(super) item: InventoryItem,
    pub(super) name: String,
}

impl Line {
    /// Where a page starting or ending at this line stands.
    pub(super) fn position(&self) -> Position {
        Position::new(self.item.pet_id, &self.name)
    }
}

/// A page of stock lines, where it stands in the list, and the categories (for the filter).
pub(super) type Lines = (Vec<Line>, Place, Vec<Category>);

/// The entries `asked` finds (a page), each with its pet's name, and the categories.
pub(super) fn lines(shop: &PetService<'_>, asked: &Asked) -> Result<Lines, DomainError> {
    let rows = asked.rows();
    let page = shop.inventory().list(&InventoryQuery::of_pets(&rows))?;
    // Every pet has one stock entry, so the same query of pets finds their names.
    let mut names = pet_names(shop, &rows)?;
    let lines = page
        .items
        .into_iter()
        .map(|item| Line {
            name: names.remove(&item.pet_id).unwrap_or_default(),
            item,
        })
        .collect();
    let (lines, place) = placed(shop, asked, lines, Line::position)?;
    let categories = shop.categories().list(&all_categories())?.items;
    Ok((lines, place, categories))
}

/// The stock list's address.
const LIST: &str = "/console/stock";

/// `GET /console/stock`.
pub(super) async fn stock_page(
    visit: Visit,
    state: web::Data<AppState>,
    filter: web::Query<ListFilter>,
) -> Answer {
    stock_answer(visit.into(), &state, &filter, None).await
}

async fn stock_answer(
    visitor: Visitor,
    state: &AppState,
    filter: &ListFilter,
    refused: Option<(PetId, Refusal)>,
) -> Answer {
    let low_at = filter.low_at()?;
    let asked = filter.asked()?;
    let (staff, (lines, place, categories)) = visitor
        .read(state, move |shop, _| lines(shop, &asked))
        .await?;
    let beside = filter.beside(
        LIST,
        lines.first().map(Line::position),
        lines.last().map(Line::position),
    );
    let staff = &staff;
    let outcome = |id: PetId| match &refused {
        Some((at, refusal)) if *at == id => Some(Err(refusal.error())),
        _ => None,
    };
    let body = html! {
        (filter.form("/console/stock", &categories))
        p { a href=(filter.at("/console/stock/delivery", None, None)) { "Enter a delivery" } " for the pets this filter finds." }
        table.cards {
            caption.sr-only { "Stock per pet" }
            thead { tr { (filter.sorted_heading(LIST, "Pet", PetSort::Name)) th scope="col" { "Status" } th scope="col" { "Units to order" } th scope="col" { "Held, in open orders" } th scope="col" { "Result" } } }
            tbody {
                @for line in &lines { (row(staff, line, low_at, outcome(line.item.pet_id))) }
            }
        }
        @if lines.is_empty() && place == Place::of(0, 0, 0) { p { "No pet matches." } }
        (pager(place, &beside))
    };
    let status = status_of(refused.as_ref().map(|(_, refusal)| refusal));
    Ok(html(status, page(staff, "/console/stock", "Stock", body)))
}

/// One pet's row: its units, a form to set them, and what the last change gave; marked when
/// out of stock or at `low_at` or below (which its form carries when it is not the default,
/// for the row drawn again).
fn row(staff: &Staff, line: &Line, low_at: u32, outcome: Option<Result<(), &ApiError>>) -> Markup {
    // An id is digits: written as they are, not escaped (100 rows, five places each).
    let id = line.item.pet_id.get();
    let action = PreEscaped(format!("/console/stock/{id}"));
    let field = PreEscaped(format!("units-{id}"));
    html! {
        tr #{ "stock-" (id) } {
            td data-label="Pet" { a href={ "/console/pets/" (id) } { (line.name) } }
            td data-label="Status" { (line.item.status.as_str()) }
            td data-label="Units to order" {
                form.inline method="post" action=(action) hx-post=(action) hx-target="closest tr" hx-swap="outerHTML" {
                    (token_field(staff))
                    (version_field(&line.item))
                    @if low_at != LOW_AT { input type="hidden" name="low_at" value=(low_at); }
                    label.sr-only for=(field) { "Units of " (line.name) }
                    input id=(field) name="quantity" type="number" min="0" max="1000000" required value=(line.item.quantity.get());
                    button.plain type="submit" { "Set" }
                }
                span.mark { (level(line.item.quantity.get(), low_at)) }
            }
            td data-label="Held, in open orders" {
                (line.item.held.get()) " held, " (line.item.committed.get()) " in orders"
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
    /// The level the page marks as low, when not the default.
    #[serde(default)]
    low_at: String,
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

/// What a stock set through a form says it did, naming the pet.
pub(super) async fn level_said(
    state: &AppState,
    id: PetId,
    item: &InventoryItem,
) -> Result<String, ApiError> {
    let pet = state.read(move |shop| shop.pets().get(id)).await?;
    Ok(format!(
        "Set the stock of {} to {}.",
        pet.name.as_str(),
        units(item.quantity.get())
    ))
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
    // Read before the write: a form refused for its low level must have changed nothing.
    let low_at = low_at(&fields.low_at)?;
    let set = set_level(&state, staff.caller(), id, &fields).await;
    if !wants_row(&req) {
        return match set {
            Ok(item) => {
                let said = level_said(&state, id, &item).await?;
                Ok(see_other_saying("/console/stock", &said))
            }
            Err(error) => {
                let refused = Some((id, error.into()));
                stock_answer(staff.into(), &state, &ListFilter::default(), refused).await
            }
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
        row(&staff, &item, low_at, Some(set.as_ref().map(|_| ()))),
    ))
}

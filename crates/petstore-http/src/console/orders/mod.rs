//! The orders page: every order, filtered by status, each completed in place (htmx swaps the
//! one row); cancelling is asked first (`removals.rs`).

use std::collections::HashMap;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, web};
use maud::{Markup, html};
use petstore_core::{
    Caller, DomainError, Order, OrderId, OrderPatch, OrderQuery, PageSize, Pet, PetId, PetQuery,
};

mod filter;

use filter::{Asked, OrderFilter, PetSearch};

use super::catalogue::pet_names;
use super::pager::{Beside, Place, pager};
use super::refused::{Refusal, alert};
use super::reply::{
    Answer, VersionOnly, html, parsed, see_other_saying, status_of, unchanged, wants_row,
};
use super::session::Submitted;
use super::view::{done, page, token_field, version_field};
use super::visitor::{Staff, Visit, Visitor};
use crate::error::ApiError;
use crate::state::{AppState, PetService};

/// An order with what it holds in words: its pet's name, or each line's pet and units.
struct Line {
    order: Order,
    pets: String,
}

impl Line {
    /// `order`, its pets named by `names` (an id where a pet is gone).
    fn of(order: Order, names: &HashMap<PetId, String>) -> Self {
        let name = |pet: PetId| {
            names
                .get(&pet)
                .cloned()
                .unwrap_or_else(|| format!("#{pet}"))
        };
        let pets = match order.lines.as_slice() {
            [_, _, ..] => order
                .lines
                .iter()
                .map(|line| format!("{} × {}", name(line.pet_id), line.quantity.get()))
                .collect::<Vec<_>>()
                .join(", "),
            _ => name(order.pet_id),
        };
        Self { order, pets }
    }

    /// The units of every line.
    fn units(&self) -> u32 {
        self.order
            .lines
            .iter()
            .map(|line| line.quantity.get())
            .sum()
    }
}

/// `GET /console/orders`.
pub(super) async fn orders_page(
    visit: Visit,
    state: web::Data<AppState>,
    filter: web::Query<OrderFilter>,
) -> Answer {
    orders_answer(visit.into(), &state, &filter, None).await
}

/// A page of the orders list, as read.
struct Listed {
    lines: Vec<Line>,
    place: Place,
    /// When a pet was searched by name and not exactly one pet has it: the pets that do.
    choosing: Option<Vec<Pet>>,
}

/// The orders `asked` finds, where the page stands among them, and the pets' names.
fn listed(shop: &PetService<'_>, caller: Caller, asked: &Asked) -> Result<Listed, DomainError> {
    let mut query = asked.query;
    match &asked.pet {
        PetSearch::Any => {}
        PetSearch::Id(id) => query.pet_id = Some(*id),
        PetSearch::Named(text) => {
            let named = PetQuery::new(None, None, Some(text.clone()), Vec::new())?
                .page(None, PageSize::new(CHOICES)?);
            let found = shop.pets().list(&named)?.items;
            match found.as_slice() {
                [one] => query.pet_id = Some(one.id),
                _ => {
                    return Ok(Listed {
                        lines: Vec::new(),
                        place: Place::of(0, 0, 0),
                        choosing: Some(found),
                    });
                }
            }
        }
    }
    let orders = shop.orders();
    let page = match asked.before {
        Some(before) => {
            let mut items = orders.list(caller, &query.backwards_from(before))?.items;
            items.reverse();
            items
        }
        None => orders.list(caller, &query)?.items,
    };
    let total = orders.count(
        caller,
        &OrderQuery {
            after: None,
            ..query
        },
    )?;
    let first_page = query.after.is_none() && asked.before.is_none();
    let place = Place::of_page(total, first_page, &page, |first| {
        let after = OrderQuery {
            after: Some(first.id),
            ..query
        };
        orders.count(caller, &after)
    })?;
    let names = names_of(shop, &page)?;
    Ok(Listed {
        place,
        lines: page
            .into_iter()
            .map(|order| Line::of(order, &names))
            .collect(),
        choosing: None,
    })
}

/// The most pets a search by name offers to choose from.
const CHOICES: i64 = 20;

async fn orders_answer(
    visitor: Visitor,
    state: &AppState,
    filter: &OrderFilter,
    refused: Option<(OrderId, Refusal)>,
) -> Answer {
    let asked = filter.asked()?;
    let (staff, listed) = visitor
        .read(state, move |shop, caller| listed(shop, caller, &asked))
        .await?;
    let staff = &staff;
    let outcome = |id: OrderId| match &refused {
        Some((at, refusal)) if *at == id => Some(Err(refusal.error())),
        _ => None,
    };
    let lines = &listed.lines;
    let beside = Beside {
        first: filter.at(None, None),
        previous: filter.at(None, lines.first().map(|line| line.order.id)),
        next: filter.at(lines.last().map(|line| line.order.id), None),
    };
    let (sorted, turn) = if filter.oldest_first() {
        ("ascending", "Oldest first: show the newest first")
    } else {
        ("descending", "Newest first: show the oldest first")
    };
    let searched = filter.pet.trim();
    let body = html! {
        p { a href="/console/orders/new" { "Place an order at the counter" } " (several pets, the total shown before it is placed)." }
        form.filters method="get" action="/console/orders" role="search" {
            div {
                label for="filter-order-status" { "Status" }
                select #filter-order-status name="status" {
                    @for (value, label) in [("", "Any"), ("open", "Open"), ("complete", "Complete")] {
                        option value=(value) selected[filter.status == value] { (label) }
                    }
                }
            }
            div {
                label for="filter-order-pet" { "Pet (name or id)" }
                input #filter-order-pet name="pet" type="search" maxlength="100" value=(filter.pet);
            }
            div {
                label for="filter-order-sort" { "Order" }
                select #filter-order-sort name="sort" {
                    option value="" selected[!filter.oldest_first()] { "Newest first" }
                    option value="oldest" selected[filter.oldest_first()] { "Oldest first" }
                }
            }
            button type="submit" { "Filter" }
        }
        @if let Some(pets) = &listed.choosing {
            @if pets.is_empty() {
                p { "No pet's name contains \u{201c}" (searched) "\u{201d}." }
            } @else {
                p #choose-pet { "More than one pet's name contains \u{201c}" (searched) "\u{201d}: whose orders?" }
                ul aria-labelledby="choose-pet" {
                    @for pet in pets {
                        li { a href=(filter.of_pet(pet.id)) { (pet.name.as_str()) " (pet " (pet.id) ")" } }
                    }
                }
            }
        } @else {
            table.cards {
                caption.sr-only { "Orders" }
                thead { tr {
                    th scope="col" aria-sort=(sorted) { a href=(filter.turned()) title=(turn) { "Order" } }
                    th scope="col" { "Pet" } th scope="col" { "Units" }
                    th scope="col" { "Total" } th scope="col" { "Ship date" } th scope="col" { "Status" } th scope="col" { "Actions" }
                } }
                tbody {
                    @for line in lines { (row(staff, line, outcome(line.order.id))) }
                }
            }
            @if lines.is_empty() && listed.place == Place::of(0, 0, 0) { p { "No order matches." } }
            (pager(listed.place, &beside))
        }
    };
    let status = status_of(refused.as_ref().map(|(_, refusal)| refusal));
    Ok(html(status, page(staff, "/console/orders", "Orders", body)))
}

/// One order's row, with what the last change to it gave.
fn row(staff: &Staff, line: &Line, outcome: Option<Result<&str, &ApiError>>) -> Markup {
    let order = &line.order;
    let action = format!("/console/orders/{}", order.id);
    html! {
        tr #{ "order-" (order.id) } {
            td data-label="Order" { a href={ "/console/orders/" (order.id) } { (order.id) } }
            td data-label="Pet" { (line.pets) }
            td data-label="Units" { (line.units()) }
            td data-label="Total" {
                @match (order.total_amount, order.currency) {
                    (Some(total), Some(currency)) => (currency.show(total.get())),
                    _ => "unpriced",
                }
            }
            td data-label="Ship date" { (order.ship_date.map(|d| d.format("%Y-%m-%d").to_string()).unwrap_or_default()) }
            td data-label="Status" { @if order.complete { "complete" } @else { "open" } }
            td data-label="Actions" {
                @if !order.complete {
                    div.actions {
                        form.inline method="post" action={ (action) "/complete" } hx-post={ (action) "/complete" } hx-target="closest tr" hx-swap="outerHTML" {
                            (token_field(staff))
                            (version_field(order))
                            button.plain type="submit" { "Complete order " (order.id) }
                        }
                        a.button.danger.apart href={ (action) "/cancel" } { "Cancel order " (order.id) "…" }
                    }
                }
                @match outcome {
                    Some(Ok(text)) => (done(text)),
                    Some(Err(error)) => (alert(error, &format!("order {}", order.id))),
                    None => {},
                }
            }
        }
    }
}

/// The names of the pets `orders` name on any line (a page's worth at most: one read).
fn names_of(
    shop: &PetService<'_>,
    orders: &[Order],
) -> Result<HashMap<PetId, String>, DomainError> {
    let mut ids: Vec<PetId> = orders
        .iter()
        .flat_map(|order| order.lines.iter().map(|line| line.pet_id))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids.truncate(usize::try_from(PageSize::MAX_PAGE.get()).unwrap_or(100));
    let of_these = PetQuery::new(None, None, None, ids)?.page(None, PageSize::MAX_PAGE);
    pet_names(shop, &of_these)
}

/// The order `id` with its pets' names, as it is now.
async fn line(state: &AppState, staff: &Staff, id: OrderId) -> Result<Line, ApiError> {
    let caller = staff.caller();
    state
        .read(move |shop| {
            let order = shop.orders().get(caller, id)?;
            let names = names_of(shop, std::slice::from_ref(&order))?;
            Ok(Line::of(order, &names))
        })
        .await
}

/// `POST /console/orders/{orderId}/complete`.
pub(super) async fn complete_order(
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Submitted<VersionOnly>,
) -> Answer {
    let Submitted { staff, fields } = form;
    let id: OrderId = parsed(&id)?;
    let caller = staff.caller();
    let condition = unchanged::<Order>(fields.version);
    let patch = OrderPatch {
        complete: Some(true),
        ship_date: None,
    };
    let completed = state
        .write(move |shop| {
            shop.orders()
                .update(caller, id, patch.clone(), condition.clone())
        })
        .await;
    if !wants_row(&req) {
        return match completed {
            Ok(_) => Ok(see_other_saying(
                &format!("/console/orders/{id}"),
                &format!("Completed order {id}."),
            )),
            Err(error) => {
                let refused = Some((id, error.into()));
                orders_answer(staff.into(), &state, &OrderFilter::default(), refused).await
            }
        };
    }
    let now = line(&state, &staff, id).await?;
    let status = completed
        .as_ref()
        .map_or_else(ApiError::status, |_| StatusCode::OK);
    let said = format!("Completed order {id}.");
    let outcome = completed.as_ref().map(|_| said.as_str());
    Ok(html(status, row(&staff, &now, Some(outcome))))
}

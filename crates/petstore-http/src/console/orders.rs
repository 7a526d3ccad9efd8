//! The orders page: every order, filtered by status, each completed in place (htmx swaps the
//! one row); cancelling is asked first (`removals.rs`).

use std::collections::HashMap;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, web};
use maud::{Markup, html};
use petstore_core::{
    DomainError, Order, OrderId, OrderPatch, OrderQuery, PageSize, PetId, PetQuery,
};
use serde::Deserialize;

use super::catalogue::pet_names;
use super::refused::{Refusal, alert};
use super::reply::{
    Answer, VersionOnly, html, parsed, parsed_if_given, see_other_saying, status_of, unchanged,
    wants_row,
};
use super::session::Submitted;
use super::view::{done, page, token_field, version_field};
use super::visitor::{Staff, Visit, Visitor};
use crate::error::ApiError;
use crate::state::{AppState, PetService};

/// The orders list's filter and position, as its form and links send them.
#[derive(Debug, Default, Clone, Deserialize)]
pub(super) struct OrderFilter {
    /// `open`, `complete`, or empty for every order.
    #[serde(default)]
    status: String,
    #[serde(default)]
    after: String,
}

impl OrderFilter {
    fn query(&self) -> Result<OrderQuery, ApiError> {
        let complete = match self.status.as_str() {
            "" => None,
            "open" => Some(false),
            "complete" => Some(true),
            _ => {
                return Err(ApiError::invalid_parameter(
                    "status: must be open, complete or empty",
                ));
            }
        };
        let after = parsed_if_given(&self.after)?;
        Ok(OrderQuery {
            complete,
            after,
            limit: PageSize::MAX_PAGE,
            ..OrderQuery::default()
        })
    }
}

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

async fn orders_answer(
    visitor: Visitor,
    state: &AppState,
    filter: &OrderFilter,
    refused: Option<(OrderId, Refusal)>,
) -> Answer {
    let query = filter.query()?;
    let (staff, (lines, next)) = visitor
        .read(state, move |shop, caller| {
            let page = shop.orders().list(caller, &query)?;
            let names = names_of(shop, &page.items)?;
            let lines = page
                .items
                .into_iter()
                .map(|order| Line::of(order, &names))
                .collect::<Vec<_>>();
            Ok((lines, page.next_after))
        })
        .await?;
    let staff = &staff;
    let outcome = |id: OrderId| match &refused {
        Some((at, refusal)) if *at == id => Some(Err(refusal.error())),
        _ => None,
    };
    let body = html! {
        form.filters method="get" action="/console/orders" role="search" {
            div {
                label for="filter-order-status" { "Status" }
                select #filter-order-status name="status" {
                    @for (value, label) in [("", "Any"), ("open", "Open"), ("complete", "Complete")] {
                        option value=(value) selected[filter.status == value] { (label) }
                    }
                }
            }
            button type="submit" { "Filter" }
        }
        table.cards {
            caption.sr-only { "Orders" }
            thead { tr {
                th scope="col" { "Order" } th scope="col" { "Pet" } th scope="col" { "Units" }
                th scope="col" { "Total" } th scope="col" { "Ship date" } th scope="col" { "Status" } th scope="col" { "Actions" }
            } }
            tbody {
                @for line in &lines { (row(staff, line, outcome(line.order.id))) }
            }
        }
        @if lines.is_empty() { p { "No order matches." } }
        @if let Some(next) = next {
            p { a href={ "/console/orders?status=" (filter.status) "&after=" (next) } { "Next page" } }
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

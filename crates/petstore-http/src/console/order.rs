//! One order's page: its lines at the prices they were placed at, its total, its ship date
//! (set here), and its history (who placed, changed and completed it, and when), read from
//! the shop's events.

use actix_web::web;
use chrono::{NaiveDate, NaiveTime};
use maud::html;
use petstore_core::{Order, OrderId, OrderPatch, PetId, PetQuery};
use serde::Deserialize;

use super::catalogue::pet_names;
use super::events::{order_history, sentences};
use super::refused::{Input, Refusal, input, message, note_at};
use super::reply::{Answer, html, parsed, see_other_saying, status_of, unchanged, units};
use super::session::Submitted;
use super::view::{page, token_field, version_field};
use super::visitor::{Visit, Visitor};
use crate::error::ApiError;
use crate::state::AppState;

/// `GET /console/orders/{orderId}`.
pub(super) async fn order_page(
    visit: Visit,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Answer {
    let id: OrderId = parsed(&id)?;
    order_answer(visit.into(), &state, id, None).await
}

async fn order_answer(
    visitor: Visitor,
    state: &AppState,
    id: OrderId,
    refused: Option<(Refusal, ShipFields)>,
) -> Answer {
    // Read where the feed is read (the primary), the order with it: one trip.
    let (staff, (order, names, history)) = visitor
        .read_primary(state, move |shop, caller| {
            let order = shop.orders().get(caller, id)?;
            let mut pets: Vec<PetId> = order.lines.iter().map(|line| line.pet_id).collect();
            pets.sort_unstable();
            pets.dedup();
            let names = pet_names(shop, &PetQuery::new(None, None, None, pets)?)?;
            Ok((order, names, order_history(shop, caller, id)?))
        })
        .await?;
    let staff = &staff;
    let said = sentences(&history, &names);
    let action = format!("/console/orders/{id}");
    let subject = format!("order {id}");
    let refusal = refused.as_ref().map(|(refusal, _)| refusal);
    let typed = refused.as_ref().map(|(_, typed)| typed.ship_date.clone());
    let ship_date = typed.unwrap_or_else(|| {
        order
            .ship_date
            .map(|date| date.format("%Y-%m-%d").to_string())
            .unwrap_or_default()
    });
    let show = |minor: i64| order.currency.map(|currency| currency.show(minor));
    let body = html! {
        p {
            @if order.complete { "Complete." } @else { "Open: its units are out of stock until it is completed or cancelled." }
        }
        table.cards {
            caption { "Lines" }
            thead { tr {
                th scope="col" { "Line" } th scope="col" { "Pet" } th scope="col" { "Units" }
                th scope="col" { "Price each" } th scope="col" { "Amount" }
            } }
            tbody {
                @for line in &order.lines {
                    tr {
                        td data-label="Line" { (line.line_no) }
                        td data-label="Pet" {
                            @match names.get(&line.pet_id) {
                                Some(name) => a href={ "/console/pets/" (line.pet_id) } { (name) },
                                None => { "pet " (line.pet_id) " (deleted)" },
                            }
                        }
                        td data-label="Units" { (line.quantity.get()) }
                        td data-label="Price each" { (line.unit_amount.and_then(|a| show(a.get())).unwrap_or_else(|| "unpriced".into())) }
                        td data-label="Amount" { (line.amount.and_then(|a| show(a.get())).unwrap_or_else(|| "unpriced".into())) }
                    }
                }
            }
        }
        p {
            "Total: "
            strong { (order.total_amount.and_then(|t| show(t.get())).unwrap_or_else(|| "unpriced".into())) }
            " for " (units(order.lines.iter().map(|line| line.quantity.get()).sum())) "."
        }
        h2 { "Ship date" }
        (message(refusal, &subject))
        form.inline method="post" action={ (action) "/ship-date" } {
            (token_field(staff))
            (version_field(&order))
            label for="ship-date" { "Ships on" }
            (input(refusal, &Input::date("ship-date", "ship_date", &ship_date)))
            button.plain type="submit" { "Set the ship date" }
        }
        (note_at(refusal, "ship_date", "ship-date", &subject))
        @if !order.complete {
            h2 { "Complete or cancel" }
            div.actions {
                form.inline method="post" action={ (action) "/complete" } {
                    (token_field(staff))
                    (version_field(&order))
                    button.plain type="submit" { "Complete order " (id) }
                }
                a.button.danger.apart href={ (action) "/cancel" } { "Cancel order " (id) "…" }
            }
        }
        h2 { "History" }
        @if said.is_empty() {
            p.muted { "None among the shop's latest events." }
        } @else {
            table.cards {
                caption.sr-only { "History" }
                thead { tr { th scope="col" { "Time (UTC)" } th scope="col" { "What happened" } } }
                tbody {
                    @for (event, sentence) in &said {
                        tr {
                            td data-label="Time (UTC)" { (event.time.format("%Y-%m-%d %H:%M:%S")) }
                            td data-label="What happened" { (sentence) }
                        }
                    }
                }
            }
        }
        p { a href="/console/orders" { "Back to the orders" } }
    };
    let title = format!("Order {id}");
    Ok(html(
        status_of(refusal),
        page(staff, "/console/orders", &title, body),
    ))
}

/// The ship date form's fields.
#[derive(Debug, Deserialize)]
pub(super) struct ShipFields {
    #[serde(default)]
    ship_date: String,
    #[serde(default)]
    version: String,
}

/// `POST /console/orders/{orderId}/ship-date`: sets the day the order ships (no day: clears
/// it), if nobody changed the order since the page was read.
pub(super) async fn set_ship_date(
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Submitted<ShipFields>,
) -> Answer {
    let Submitted { staff, fields } = form;
    let id: OrderId = parsed(&id)?;
    let caller = staff.caller();
    // No day clears the ship date.
    let day = match fields.ship_date.trim() {
        "" => Ok(None),
        text => NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .map(Some)
            .map_err(|_| {
                Refusal::at("ship_date")(ApiError::validation(
                    "ship_date: must be a day, as 2026-12-24",
                ))
            }),
    };
    let set = match day {
        Ok(day) => {
            let patch = OrderPatch {
                ship_date: Some(day.map(|day| day.and_time(NaiveTime::MIN).and_utc())),
                complete: None,
            };
            let condition = unchanged::<Order>(fields.version.clone());
            state
                .write(move |shop| {
                    shop.orders()
                        .update(caller, id, patch.clone(), condition.clone())
                })
                .await
                .map_err(Refusal::from)
        }
        Err(refusal) => Err(refusal),
    };
    match set {
        Ok(order) => {
            let said = match order.ship_date {
                Some(date) => format!("Order {id} ships on {}.", date.format("%Y-%m-%d")),
                None => format!("Order {id} has no ship date now."),
            };
            Ok(see_other_saying(&format!("/console/orders/{id}"), &said))
        }
        Err(refusal) => order_answer(staff.into(), &state, id, Some((refusal, fields))).await,
    }
}

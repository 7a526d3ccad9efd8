//! A checkout at the counter: an order of several lines, entered by pet name or id, its
//! total shown before it is placed, and placed only at that total (`expectedTotal`).

use actix_web::web;
use maud::{Markup, html};
use petstore_core::{
    CheckoutLines, Currency, DomainError, Idempotent, NewCheckout, NewLine, Order, Outcome, Pet,
    PetId, PetQuery, Quantity, Total,
};
use serde::Deserialize;

use super::attempt::{self, attempt_field};
use super::refused::{Refusal, alert, message};
use super::reply::{Answer, html, see_other, see_other_saying, status_of_rows};
use super::session::{Submitted, one_or_more};
use super::view::{page, token_field};
use super::visitor::{Staff, Visit, Visitor};
use crate::error::ApiError;
use crate::state::{AppState, PetService};

/// The counter's address.
const PAGE: &str = "/console/orders/new";

/// How many empty lines the form offers.
const ROWS: usize = 5;

/// The counter's form: per line, the pet as typed (a name or an id) and its units; the step
/// it asks for (`review`, or `place` at the total shown).
#[derive(Debug, Default, Deserialize)]
pub(super) struct CounterFields {
    #[serde(default, deserialize_with = "one_or_more")]
    pet: Vec<String>,
    #[serde(default, deserialize_with = "one_or_more")]
    units: Vec<String>,
    #[serde(default)]
    step: String,
    #[serde(default)]
    expected_total: String,
    #[serde(default)]
    attempt: String,
}

/// A line as typed, and what was found of it.
#[derive(Debug, Default)]
struct Line {
    pet: String,
    units: String,
    found: Option<(Pet, Quantity)>,
    refused: Option<ApiError>,
}

/// `GET /console/orders/new`.
pub(super) async fn counter_page(visit: Visit, state: web::Data<AppState>) -> Answer {
    // An empty form: the page reads its session and nothing else.
    let (staff, ()) = Visitor::from(visit).read(&state, |_, _| Ok(())).await?;
    counter_answer(&staff, state.currency(), blank_lines(Vec::new()), None)
}

fn counter_answer(
    staff: &Staff,
    currency: Currency,
    lines: Vec<Line>,
    general: Option<Refusal>,
) -> Answer {
    let total = total_of(&lines);
    let ready = general.is_none()
        && lines.iter().any(|line| line.found.is_some())
        && lines.iter().all(|line| line.refused.is_none());
    let status = status_of_rows(
        general.as_ref(),
        lines.iter().filter_map(|line| line.refused.as_ref()),
    );
    let review = match total.filter(|_| ready) {
        Some(total) => Some(review(staff, &lines, total, currency)?),
        None => None,
    };
    let body = html! {
        p.muted { "For a customer at the counter or on the phone: enter each pet (its name or its id) and its units, see the total, then place the order at that total." }
        (message(general.as_ref(), "the order"))
        @if let Some(review) = review { (review) }
        form method="post" action=(PAGE) {
            (token_field(staff))
            table.cards {
                caption { "Lines" }
                thead { tr { th scope="col" { "Line" } th scope="col" { "Pet (name or id)" } th scope="col" { "Units" } th scope="col" { "Price each, amount" } } }
                tbody {
                    @for (at, line) in lines.iter().enumerate() { (entry_row(at + 1, line, currency)) }
                }
            }
            button type="submit" name="step" value="review" { "Show the total" }
        }
        p { a href="/console/orders" { "Back to the orders" } }
    };
    Ok(html(
        status,
        page(staff, "/console/orders", "An order at the counter", body),
    ))
}

/// The total of the lines found, when every one has a price.
fn total_of(lines: &[Line]) -> Option<Total> {
    let amounts = lines
        .iter()
        .filter_map(|line| line.found.as_ref())
        .map(|(pet, units)| pet.price.map(|price| price.amount.times(*units)));
    Total::sum_known(amounts)
}

/// The lines found, their total, and the button that places them at it.
fn review(
    staff: &Staff,
    lines: &[Line],
    total: Total,
    currency: Currency,
) -> Result<Markup, ApiError> {
    let attempt = attempt_field()?;
    Ok(html! {
        form.review method="post" action=(PAGE) {
            (token_field(staff))
            (attempt)
            @for (pet, units) in lines.iter().filter_map(|line| line.found.as_ref()) {
                input type="hidden" name="pet" value=(pet.id);
                input type="hidden" name="units" value=(units.get());
            }
            input type="hidden" name="expected_total" value=(total.get());
            p.total { "Total: " strong { (currency.show(total.get())) } }
            button type="submit" name="step" value="place" { "Place the order for " (currency.show(total.get())) }
        }
    })
}

/// One line of the entry form, as typed, with what was found or why it was refused.
fn entry_row(line_no: usize, line: &Line, currency: Currency) -> Markup {
    let pet_field = format!("counter-pet-{line_no}");
    let units_field = format!("counter-units-{line_no}");
    html! {
        tr {
            td data-label="Line" { (line_no) }
            td data-label="Pet (name or id)" {
                label.sr-only for=(pet_field) { "Pet of line " (line_no) }
                input id=(pet_field) name="pet" type="text" maxlength="100" value=(line.pet)
                    aria-invalid=[line.refused.as_ref().map(|_| "true")];
                @if let Some((pet, _)) = &line.found { " " span.muted { (pet.name.as_str()) " (pet " (pet.id) ")" } }
            }
            td data-label="Units" {
                label.sr-only for=(units_field) { "Units of line " (line_no) }
                input id=(units_field) name="units" type="number" min="1" max="1000000" value=(line.units);
            }
            td data-label="Price each, amount" {
                @if let Some((pet, units)) = &line.found {
                    @match pet.price {
                        Some(price) => { (currency.show(price.amount.get())) ", " (currency.show(price.amount.times(*units).get())) },
                        None => "no price",
                    }
                }
                @if let Some(error) = &line.refused {
                    @let subject = line.found.as_ref().map_or(line.pet.trim(), |(pet, _)| pet.name.as_str());
                    (alert(error, subject))
                }
            }
        }
    }
}

/// `POST /console/orders/new`: shows the total of the lines typed, or places them at the
/// total shown.
pub(super) async fn counter_post(
    state: web::Data<AppState>,
    form: Submitted<CounterFields>,
) -> Answer {
    let Submitted { staff, fields } = form;
    if fields.pet.len() != fields.units.len() {
        return Err(ApiError::validation("the form: every line has a pet and its units").into());
    }
    let typed: Vec<(String, String)> = fields
        .pet
        .iter()
        .zip(&fields.units)
        .filter(|(pet, units)| !pet.trim().is_empty() || !units.trim().is_empty())
        .map(|(pet, units)| (pet.trim().to_owned(), units.trim().to_owned()))
        .collect();
    let caller = staff.caller();
    let currency = state.currency();
    let mut lines = state
        .read(move |shop| {
            typed
                .iter()
                .map(|(pet, units)| found(shop, pet, units))
                .collect::<Result<Vec<_>, _>>()
        })
        .await?;
    if lines.is_empty() {
        let none = ApiError::validation("lines: enter at least one pet and its units");
        return counter_answer(&staff, currency, blank_lines(lines), Some(none.into()));
    }
    if fields.step != "place" || lines.iter().any(|line| line.refused.is_some()) {
        return counter_answer(&staff, currency, blank_lines(lines), None);
    }
    let expected = fields
        .expected_total
        .trim()
        .parse::<i64>()
        .ok()
        .and_then(|total| Total::new(total).ok());
    let new_lines: Vec<NewLine> = lines
        .iter()
        .filter_map(|line| line.found.as_ref())
        .map(|(pet, units)| NewLine {
            pet_id: pet.id,
            quantity: *units,
        })
        .collect();
    let asked: Vec<(i64, u32)> = new_lines
        .iter()
        .map(|line| (line.pet_id.get(), line.quantity.get()))
        .collect();
    let key = attempt::key(&fields.attempt, PAGE, &(asked, expected.map(Total::get)))?;
    let checkout = NewCheckout {
        lines: CheckoutLines::new(new_lines).map_err(DomainError::from)?,
        ship_date: None,
        expected_total: expected,
    };
    let placed = state
        .write(move |shop| {
            let record = |order: &Order| attempt::record(order, &placed_order(order));
            let once = key.clone().map(|key| Idempotent {
                key,
                record: &record,
            });
            shop.orders().checkout(caller, checkout.clone(), once)
        })
        .await;
    match placed {
        Ok(Outcome::Done(order)) => Ok(see_other_saying(
            &format!("/console/orders/{}", order.id),
            &placed_order(&order),
        )),
        Ok(Outcome::Replayed(recorded)) => Ok(match attempt::replayed(&recorded) {
            Some((id, said)) => see_other_saying(&format!("/console/orders/{id}"), &said),
            None => see_other("/console/orders"),
        }),
        Err(error) if error.refused_lines().is_empty() => {
            counter_answer(&staff, currency, blank_lines(lines), Some(error.into()))
        }
        Err(error) => {
            let placed_lines: Vec<usize> = (0..lines.len())
                .filter(|at| lines[*at].found.is_some())
                .collect();
            for (line_no, refusal) in error.refused_lines() {
                if let Some(at) = placed_lines.get(usize::from(*line_no).saturating_sub(1)) {
                    lines[*at].refused = Some(refusal.clone());
                }
            }
            counter_answer(&staff, currency, blank_lines(lines), None)
        }
    }
}

/// What the page says of an order it placed.
fn placed_order(order: &Order) -> String {
    let total = order
        .total_amount
        .zip(order.currency)
        .map(|(total, currency)| format!(" for {}", currency.show(total.get())))
        .unwrap_or_default();
    format!("Placed order {}{total}.", order.id)
}

/// The lines, with empty ones after them up to the form's rows.
fn blank_lines(mut lines: Vec<Line>) -> Vec<Line> {
    while lines.len() < ROWS {
        lines.push(Line::default());
    }
    lines
}

/// A line as typed, with its pet found by id or by name, and its units counted: or why not.
fn found(shop: &PetService<'_>, pet: &str, units: &str) -> Result<Line, DomainError> {
    let mut line = Line {
        pet: pet.to_owned(),
        units: units.to_owned(),
        ..Line::default()
    };
    let counted = units
        .parse::<i64>()
        .ok()
        .and_then(|units| Quantity::new(units).ok());
    let named = match named_pet(shop, pet)? {
        Ok(named) => named,
        Err(why) => {
            line.refused = Some(why);
            return Ok(line);
        }
    };
    if named.price.is_none() {
        line.refused = Some(DomainError::PriceMissing { pet_id: named.id }.into());
    }
    match counted {
        Some(units) => line.found = Some((named, units)),
        None => {
            line.refused = Some(ApiError::validation(
                "units: must be a count of units from 1 to 1000000",
            ));
        }
    }
    Ok(line)
}

/// The pet `typed` names: its id, or a name that one pet's name is (case aside), or that
/// only one pet's name contains.
fn named_pet(shop: &PetService<'_>, typed: &str) -> Result<Result<Pet, ApiError>, DomainError> {
    if typed.is_empty() {
        return Ok(Err(ApiError::validation("pet: enter a pet's name or id")));
    }
    if typed.bytes().all(|b| b.is_ascii_digit()) {
        let Ok(id) = typed.parse::<PetId>() else {
            return Ok(Err(ApiError::validation("pet: not a pet's id")));
        };
        return Ok(match shop.pets().get(id) {
            Ok(pet) => Ok(pet),
            Err(DomainError::NotFound { .. }) => {
                Err(ApiError::validation(format!("pet: no pet has the id {id}")))
            }
            Err(error) => return Err(error),
        });
    }
    let query = PetQuery::new(None, None, Some(typed.to_owned()), Vec::new())?;
    let mut found = shop.pets().list(&query)?.items;
    let same = |pet: &Pet| pet.name.as_str().to_lowercase() == typed.to_lowercase();
    if let Some(at) = found.iter().position(same) {
        return Ok(Ok(found.swap_remove(at)));
    }
    Ok(match found.len() {
        1 => Ok(found.swap_remove(0)),
        0 => Err(ApiError::validation(format!(
            "pet: no pet's name contains \u{201c}{typed}\u{201d}"
        ))),
        _ => Err(ApiError::validation(format!(
            "pet: more than one pet's name contains \u{201c}{typed}\u{201d}: give its whole name or its id"
        ))),
    })
}

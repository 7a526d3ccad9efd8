//! A delivery: the units that arrived for many pets, entered beside each and saved at once,
//! each row guarded by the version it was entered against (`InventoryUseCases::receive`).

use std::collections::HashMap;

use actix_web::web;
use maud::{Markup, html};
use petstore_core::{AdjustmentUnits, InventoryItem, PetId, PetQuery, Reason, Receipt};
use serde::Deserialize;

use super::lists::{Asked, ListFilter};
use super::pager::pager;
use super::refused::{Input, Refusal, alert, input, message, note_at};
use super::reply::{Answer, html, parsed, see_other_saying, status_of_rows, unchanged, units};
use super::session::{Submitted, one_or_more};
use super::stock::{Line, lines};
use super::view::{page, token_field, version_field};
use super::visitor::{Visit, Visitor};
use crate::error::ApiError;
use crate::state::AppState;

/// The delivery page's address.
const PAGE: &str = "/console/stock/delivery";

/// What staff typed into a refused delivery, with what was refused.
#[derive(Debug, Default)]
struct Typed {
    reason: String,
    units: HashMap<PetId, String>,
    /// Each refused row's reason.
    rows: HashMap<PetId, ApiError>,
}

/// `GET /console/stock/delivery`: the pets the stock filter finds, each with a field for the
/// units that arrived.
pub(super) async fn delivery_page(
    visit: Visit,
    state: web::Data<AppState>,
    filter: web::Query<ListFilter>,
) -> Answer {
    let asked = filter.asked()?;
    delivery_answer(visit.into(), &state, &filter, asked, None).await
}

async fn delivery_answer(
    visitor: Visitor,
    state: &AppState,
    filter: &ListFilter,
    asked: Asked,
    refused: Option<(Option<Refusal>, Typed)>,
) -> Answer {
    let (staff, (rows, place, categories)) = visitor
        .read(state, move |shop, _| lines(shop, &asked))
        .await?;
    let staff = &staff;
    let (general, typed) = match &refused {
        Some((general, typed)) => (general.as_ref(), Some(typed)),
        None => (None, None),
    };
    let beside = filter.beside(
        PAGE,
        rows.first().map(Line::position),
        rows.last().map(Line::position),
    );
    let reason = typed.map_or("Delivery", |typed| typed.reason.as_str());
    let body = html! {
        p.muted { "Enter the units that arrived beside each pet and leave the others empty. One save receives them all, or, if any row is refused, none." }
        (filter.form(PAGE, &categories))
        form method="post" action=(PAGE) {
            (token_field(staff))
            (message(general, "the delivery"))
            div.stacked {
                label for="delivery-reason" { "Reason (kept with each pet's movement)" }
                (input(general, &Input::text("delivery-reason", "reason", reason).required().max_chars(200)))
                (note_at(general, "reason", "delivery-reason", "the delivery"))
            }
            table.cards {
                caption.sr-only { "Units received per pet" }
                thead { tr { th scope="col" { "Pet" } th scope="col" { "Units to order now" } th scope="col" { "Units received" } } }
                tbody {
                    @for line in &rows { (row(line, typed)) }
                }
            }
            @if rows.is_empty() { p { "No pet matches." } }
            button type="submit" { "Receive the delivery" }
        }
        (pager(place, &beside))
        p { a href="/console/stock" { "Back to the stock" } }
    };
    let status = status_of_rows(
        general,
        typed.into_iter().flat_map(|typed| typed.rows.values()),
    );
    Ok(html(
        status,
        page(staff, "/console/stock", "A delivery", body),
    ))
}

/// One pet's row: its units now, and the field for the units received (as typed, and why it
/// was refused, after a refusal).
fn row(line: &Line, typed: Option<&Typed>) -> Markup {
    let id = line.item.pet_id;
    let field = format!("received-{id}");
    let value = typed
        .and_then(|typed| typed.units.get(&id))
        .map_or("", String::as_str);
    let refused = typed.and_then(|typed| typed.rows.get(&id));
    html! {
        tr #{ "delivery-" (id) } {
            td data-label="Pet" { a href={ "/console/pets/" (id) } { (line.name) } }
            td data-label="Units to order now" { (units(line.item.quantity.get())) }
            td data-label="Units received" {
                input type="hidden" name="pet" value=(id);
                (version_field(&line.item))
                label.sr-only for=(field) { "Units received of " (line.name) }
                input id=(field) name="units" type="number" min="1" max="1000000" value=(value)
                    aria-invalid=[refused.map(|_| "true")];
                @if let Some(error) = refused { (alert(error, &line.name)) }
            }
        }
    }
}

/// The delivery form: one reason, and per row its pet, the version it showed, and the units
/// received (empty: none).
#[derive(Debug, Deserialize)]
pub(super) struct DeliveryFields {
    #[serde(default)]
    reason: String,
    #[serde(default, deserialize_with = "one_or_more")]
    pet: Vec<String>,
    #[serde(default, deserialize_with = "one_or_more")]
    version: Vec<String>,
    #[serde(default, deserialize_with = "one_or_more")]
    units: Vec<String>,
}

/// The condition a row's version sets: the entry is still what the row showed.
type Unchanged = Box<dyn Fn(&InventoryItem) -> bool + Send + Sync>;

impl DeliveryFields {
    /// The rows' pets, in the form's order.
    fn pets(&self) -> Result<Vec<PetId>, ApiError> {
        self.pet.iter().map(|pet| parsed(pet)).collect()
    }

    /// The rows with units typed, as receipts; what was typed, and every row refused before
    /// any write (units that are not a count).
    fn receipts(&self) -> Result<(Vec<Receipt<Unchanged>>, Typed), ApiError> {
        let pets = self.pets()?;
        if pets.len() != self.units.len() || pets.len() != self.version.len() {
            return Err(ApiError::validation(
                "the form: every row has a pet, a version and units",
            ));
        }
        let mut typed = Typed {
            reason: self.reason.clone(),
            ..Typed::default()
        };
        let mut receipts = Vec::new();
        for ((pet, version), entered) in pets.iter().zip(&self.version).zip(&self.units) {
            let entered = entered.trim();
            if entered.is_empty() {
                continue;
            }
            typed.units.insert(*pet, entered.to_owned());
            let counted = entered
                .parse::<i64>()
                .ok()
                .filter(|units| *units > 0)
                .and_then(|units| AdjustmentUnits::new(units).ok());
            match counted {
                Some(units) => {
                    let condition: Unchanged =
                        Box::new(unchanged::<InventoryItem>(version.clone()));
                    receipts.push(Receipt {
                        pet_id: *pet,
                        units,
                        condition,
                    });
                }
                None => {
                    typed.rows.insert(
                        *pet,
                        ApiError::validation("units: must be a count of units from 1 to 1000000"),
                    );
                }
            }
        }
        Ok((receipts, typed))
    }
}

/// `POST /console/stock/delivery`: receives every row with units, or none.
pub(super) async fn receive_delivery(
    state: web::Data<AppState>,
    form: Submitted<DeliveryFields>,
) -> Answer {
    let Submitted { staff, fields } = form;
    let caller = staff.caller();
    let shown = PetQuery::new(None, None, None, fields.pets()?)
        .map_err(petstore_core::DomainError::from)?;
    let (receipts, mut typed) = fields.receipts()?;
    // A refused delivery shows the rows it was entered in, as typed.
    let unfiltered = ListFilter::default();
    let refused = |general: Option<Refusal>, typed: Typed| {
        delivery_answer(
            staff.clone().into(),
            &state,
            &unfiltered,
            Asked::of(shown.clone()),
            Some((general, typed)),
        )
    };
    if !typed.rows.is_empty() {
        return refused(None, typed).await;
    }
    let reason = match Reason::parse(&fields.reason) {
        Ok(reason) => reason,
        Err(error) => {
            let error = ApiError::from(petstore_core::DomainError::from(error));
            return refused(Some(Refusal::at("reason")(error)), typed).await;
        }
    };
    if receipts.is_empty() {
        let none = ApiError::validation("units: enter the units received beside at least one pet");
        return refused(Some(none.into()), typed).await;
    }
    let count = receipts.len();
    let received: u32 = receipts.iter().map(|r| r.units.get().unsigned_abs()).sum();
    let said_reason = reason.as_str().to_owned();
    let pets_in_order: Vec<PetId> = receipts.iter().map(|r| r.pet_id).collect();
    let receipts = std::sync::Arc::new(receipts);
    let done = state
        .write(move |shop| shop.inventory().receive(caller, &reason, &receipts))
        .await;
    match done {
        Ok(_) => {
            let pets = if count == 1 {
                "1 pet".to_owned()
            } else {
                format!("{count} pets")
            };
            Ok(see_other_saying(
                "/console/stock",
                &format!("Received {} for {pets}: {said_reason}.", units(received)),
            ))
        }
        Err(error) if error.refused_lines().is_empty() => refused(Some(error.into()), typed).await,
        Err(error) => {
            for (line_no, line) in error.refused_lines() {
                if let Some(pet) = pets_in_order.get(usize::from(*line_no).saturating_sub(1)) {
                    typed.rows.insert(*pet, line.clone());
                }
            }
            refused(None, typed).await
        }
    }
}

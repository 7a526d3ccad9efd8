//! One pet's page: edit it and change its status, place an order for it, read its stock
//! movements, delete it.

use actix_web::web;
use maud::{Markup, html};
use petstore_core::{
    DomainError, Idempotent, Movement, MovementId, MovementQuery, NewOrder, Order, Outcome,
    PageSize, Pet, PetId, Quantity,
};
use serde::Deserialize;

use super::attempt::{self, attempt_field};
use super::catalogue::{PetFields, all_categories, pet_form};
use super::refused::{Input, Refusal, input, message, note_at};
use super::reply::{
    Answer, html, parsed, parsed_if_given, see_other, see_other_saying, status_of, unchanged, units,
};
use super::session::Submitted;
use super::stock::{StockFields, level_said, set_level};
use super::view::{page, token_field, version_field};
use super::visitor::{Visit, Visitor};
use crate::error::ErrorCode;
use crate::state::AppState;

/// A refused form of the pet page, with what was typed into it.
enum Typed {
    Edit(PetFields),
    Stock(StockFields),
    Order(OrderFields),
}

/// Where the pet page's movements start, as its "later movements" link sends it.
#[derive(Debug, Default, Deserialize)]
pub(super) struct MovementsFrom {
    #[serde(default)]
    movements_after: String,
}

/// `GET /console/pets/{petId}`: one pet, to edit or delete, and its stock movements.
pub(super) async fn pet_page(
    visit: Visit,
    state: web::Data<AppState>,
    id: web::Path<String>,
    from: web::Query<MovementsFrom>,
) -> Answer {
    let id: PetId = parsed(&id)?;
    let after = parsed_if_given(&from.movements_after)?;
    pet_answer(visit.into(), &state, id, after, None).await
}

async fn pet_answer(
    visitor: Visitor,
    state: &AppState,
    id: PetId,
    movements_after: Option<MovementId>,
    refused: Option<(Refusal, Typed)>,
) -> Answer {
    let (staff, (pet, categories, stock, movements)) = visitor
        .read(state, move |shop, caller| {
            let movements = MovementQuery {
                pet_id: id,
                after: movements_after,
                limit: PageSize::new(50)?,
            };
            Ok((
                shop.pets().get(id)?,
                shop.categories().list(&all_categories())?.items,
                shop.inventory().get(id)?,
                shop.inventory().movements(caller, &movements)?,
            ))
        })
        .await?;
    let staff = &staff;
    let attempt = attempt_field()?;
    let action = format!("/console/pets/{id}");
    let name = pet.name.as_str();
    // A stale edit shows the pet as it is now: what was typed would undo the other change.
    let stale = |refusal: &Refusal| refusal.error().code() == ErrorCode::PreconditionFailed;
    let (mut edit, mut stocking, mut order) = (None, None, None);
    match &refused {
        Some((refusal, Typed::Edit(typed))) => {
            edit = Some((refusal, (!stale(refusal)).then_some(typed)));
        }
        Some((refusal, Typed::Stock(typed))) => {
            stocking = Some((refusal, (!stale(refusal)).then_some(typed)));
        }
        Some((refusal, Typed::Order(typed))) => order = Some((refusal, typed)),
        None => {}
    }
    let order_refused = order.map(|(refusal, _)| refusal);
    let stock_refused = stocking.map(|(refusal, _)| refusal);
    let units_typed = stocking.and_then(|(_, typed)| typed.map(|t| t.quantity.clone()));
    let body = html! {
        (pet_form(staff, &action, Some(&pet), &categories, "Save the pet", edit))
        p {
            "Price: "
            @match pet.price {
                Some(price) => (price.currency.show(price.amount.get())),
                None => "none (orders are placed unpriced)",
            }
        }
        h2 #stock { "Stock" }
        p {
            @if stock.quantity.get() == 0 { strong.out { "Out of stock." } " " }
            (units(stock.quantity.get())) " can be ordered; "
            (units(stock.held.get())) " held for baskets; "
            (units(stock.committed.get())) " in open orders."
        }
        (message(stock_refused, name))
        form.inline method="post" action={ (action) "/stock" } {
            (token_field(staff))
            (version_field(&stock))
            label for="pet-stock" { "Units that can be ordered" }
            (input(stock_refused, &Input::count("pet-stock", "quantity", &units_typed.unwrap_or_else(|| stock.quantity.get().to_string())).min(0)))
            button.plain type="submit" { "Set the stock" }
        }
        (note_at(stock_refused, "quantity", "pet-stock", name))
        h2 { "Place an order" }
        p.muted { "For a customer who orders by phone or at the counter: the units leave the stock at once." }
        (message(order_refused, name))
        form.inline method="post" action={ (action) "/order" } {
            (token_field(staff))
            (attempt)
            label for="order-quantity" { "Units" }
            (input(order_refused, &Input::count("order-quantity", "quantity", order.map_or("1", |(_, typed)| typed.quantity.as_str()))))
            button.plain type="submit" { "Place the order" }
        }
        (note_at(order_refused, "quantity", "order-quantity", name))
        (movements_table(id, &movements.items, movements.next_after))
        h2 { "Delete" }
        p { a.button.danger href={ (action) "/delete" } { "Delete " (name) "…" } }
        p { a href="/console/pets" { "Back to the pets" } }
    };
    let title = format!("Pet {}", pet.name.as_str());
    Ok(html(
        status_of(refused.as_ref().map(|(refusal, _)| refusal)),
        page(staff, "/console/pets", &title, body),
    ))
}

/// `POST /console/pets/{petId}`: saves the form, if nobody changed the pet since it was read.
pub(super) async fn replace_pet(
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Submitted<PetFields>,
) -> Answer {
    let Submitted { staff, fields } = form;
    let id: PetId = parsed(&id)?;
    let caller = staff.caller();
    let saved = match fields.new_pet() {
        Ok(new) => {
            let condition = unchanged::<Pet>(fields.version.clone());
            state
                .write(move |shop| {
                    shop.pets()
                        .replace(caller, id, new.clone(), condition.clone())
                })
                .await
                .map_err(|error| Refusal::from(error).placed(PetFields::PLACES))
        }
        Err(refusal) => Err(refusal),
    };
    match saved {
        Ok(pet) => Ok(see_other_saying(
            &format!("/console/pets/{id}"),
            &format!("Saved {}.", pet.name.as_str()),
        )),
        Err(refusal) => {
            let typed = Some((refusal, Typed::Edit(fields)));
            pet_answer(staff.into(), &state, id, None, typed).await
        }
    }
}

/// `POST /console/pets/{petId}/stock`: sets the units that can be ordered, if nobody changed
/// them since the page was read.
pub(super) async fn set_pet_stock(
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Submitted<StockFields>,
) -> Answer {
    let Submitted { staff, fields } = form;
    let id: PetId = parsed(&id)?;
    match set_level(&state, staff.caller(), id, &fields).await {
        Ok(item) => {
            let said = level_said(&state, id, &item).await?;
            Ok(see_other_saying(&format!("/console/pets/{id}"), &said))
        }
        Err(error) => {
            let refused = Refusal::from(error).placed(&[(ErrorCode::ValidationFailed, "quantity")]);
            let typed = Some((refused, Typed::Stock(fields)));
            pet_answer(staff.into(), &state, id, None, typed).await
        }
    }
}

/// The order form's field.
#[derive(Debug, Deserialize)]
pub(super) struct OrderFields {
    quantity: String,
    #[serde(default)]
    attempt: String,
}

/// `POST /console/pets/{petId}/order`: places an order for the pet, owned by nobody's key
/// but the session's, then shows it among the orders.
pub(super) async fn place_order(
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Submitted<OrderFields>,
) -> Answer {
    let Submitted { staff, fields } = form;
    let id: PetId = parsed(&id)?;
    let caller = staff.caller();
    let quantity = fields.quantity.trim().parse::<i64>().unwrap_or(0);
    let path = format!("/console/pets/{id}/order");
    let key = attempt::key(&fields.attempt, &path, &quantity)?;
    let placed = match Quantity::new(quantity).map_err(DomainError::from) {
        Ok(quantity) => state
            .write(move |shop| {
                let record = |order: &Order| attempt::record(order, &placed_order(order));
                let once = key.clone().map(|key| Idempotent {
                    key,
                    record: &record,
                });
                shop.orders()
                    .place(caller, NewOrder::new(id, quantity), once)
            })
            .await
            .map_err(|error| {
                Refusal::from(error).placed(&[
                    (ErrorCode::InsufficientStock, "quantity"),
                    (ErrorCode::ValidationFailed, "quantity"),
                ])
            }),
        Err(error) => Err(Refusal::at("quantity")(error.into())),
    };
    match placed {
        Ok(Outcome::Done(order)) => Ok(see_other_saying(
            "/console/orders?status=open",
            &placed_order(&order),
        )),
        Ok(Outcome::Replayed(recorded)) => Ok(match attempt::replayed(&recorded) {
            Some((_, said)) => see_other_saying("/console/orders?status=open", &said),
            None => see_other("/console/orders?status=open"),
        }),
        Err(refusal) => {
            let typed = Some((refusal, Typed::Order(fields)));
            pet_answer(staff.into(), &state, id, None, typed).await
        }
    }
}

/// What the page says of an order it placed.
fn placed_order(order: &Order) -> String {
    format!(
        "Placed order {} for {}.",
        order.id,
        units(order.quantity.get())
    )
}

/// A pet's stock movements, oldest first, as its page shows them (read-only): when, what moved
/// the units, how many, what was left, and who moved them and why; `next` is the position of
/// the page after, if there is one.
fn movements_table(pet: PetId, movements: &[Movement], next: Option<i64>) -> Markup {
    html! {
        h2 #movements { "Stock movements" }
        @if movements.is_empty() {
            p.muted { "None recorded yet: the ledger begins when the upgrade that brought it is finished." }
        } @else {
            table.cards {
                thead { tr {
                    th scope="col" { "When" } th scope="col" { "What" } th scope="col" { "Units" }
                    th scope="col" { "Available after" } th scope="col" { "In open orders after" }
                    th scope="col" { "By" } th scope="col" { "Why" }
                } }
                tbody {
                    @for m in movements {
                        tr {
                            td data-label="When" { (m.time.format("%Y-%m-%d %H:%M:%S")) }
                            td data-label="What" { (m.kind.as_str().replace('_', " ")) }
                            td data-label="Units" { (signed(m.available_change, m.committed_change)) }
                            td data-label="Available after" { (m.available_after.get()) }
                            td data-label="In open orders after" { (m.committed_after.get()) }
                            td data-label="By" { @if let Some(actor) = &m.actor { (actor.to_string()) } @else { "unknown" } }
                            td data-label="Why" {
                                @if let Some(reason) = &m.reason { (reason.as_str()) }
                                @if let Some(order) = m.order_id { "order " (order) }
                            }
                        }
                    }
                }
            }
            @if let Some(next) = next {
                p { a href={ "/console/pets/" (pet) "?movements_after=" (next) "#movements" } { "Later movements" } }
            }
        }
    }
}

/// The units a movement moved, as a person reads them: in or out of what can be ordered, or
/// out of open orders when only they moved (a sale).
fn signed(available: i64, committed: i64) -> String {
    match (available, committed) {
        (0, c) => format!("{c:+} in open orders"),
        (a, _) => format!("{a:+}"),
    }
}

//! One pet's page: edit it and change its status, place an order for it, read its stock
//! movements, delete it.

use actix_web::web;
use maud::{Markup, html};
use petstore_core::{
    DomainError, Movement, MovementId, MovementQuery, NewOrder, PageSize, Pet, PetId, Quantity,
};
use serde::Deserialize;

use super::catalogue::{PetFields, all_categories, pet_form};
use super::reply::{
    Answer, Shown, VersionOnly, html, parsed, parsed_if_given, see_other, status_of, unchanged,
};
use super::session::{Staff, Submitted};
use super::view::{page, refusal, token_field, version_field};
use crate::state::AppState;

/// Where the pet page's movements start, as its "later movements" link sends it.
#[derive(Debug, Default, Deserialize)]
pub(super) struct MovementsFrom {
    #[serde(default)]
    movements_after: String,
}

/// `GET /console/pets/{petId}`: one pet, to edit or delete, and its stock movements.
pub(super) async fn pet_page(
    staff: Staff,
    state: web::Data<AppState>,
    id: web::Path<String>,
    from: web::Query<MovementsFrom>,
) -> Answer {
    let id: PetId = parsed(&id)?;
    let after = parsed_if_given(&from.movements_after)?;
    pet_answer(&staff, &state, id, after, None).await
}

async fn pet_answer(
    staff: &Staff,
    state: &AppState,
    id: PetId,
    movements_after: Option<MovementId>,
    shown: Shown,
) -> Answer {
    let caller = staff.caller();
    let (pet, categories, movements) = state
        .read(move |shop| {
            let movements = MovementQuery {
                pet_id: id,
                after: movements_after,
                limit: PageSize::new(50)?,
            };
            Ok((
                shop.pets().get(id)?,
                shop.categories().list(&all_categories())?.items,
                shop.inventory().movements(caller, &movements)?,
            ))
        })
        .await?;
    let action = format!("/console/pets/{id}");
    let body = html! {
        @if let Some(error) = &shown { (refusal(error)) }
        (pet_form(staff, &action, Some(&pet), &categories, "Save the pet"))
        p {
            "Price: "
            @match pet.price {
                Some(price) => (price.currency.show(price.amount.get())),
                None => "none (orders are placed unpriced)",
            }
        }
        h2 { "Place an order" }
        p.muted { "For a customer who orders by phone or at the counter: the units leave the stock at once." }
        form.inline method="post" action={ (action) "/order" } {
            (token_field(staff))
            label for="order-quantity" { "Units" }
            input #order-quantity name="quantity" type="number" min="1" required value="1";
            button.plain type="submit" { "Place the order" }
        }
        (movements_table(id, &movements.items, movements.next_after))
        h2 { "Delete" }
        form.inline method="post" action={ (action) "/delete" } {
            (token_field(staff))
            (version_field(&pet))
            button.danger type="submit" { "Delete " (pet.name.as_str()) }
        }
        p { a href="/console/" { "Back to the pets" } }
    };
    let title = format!("Pet {}", pet.name.as_str());
    Ok(html(
        status_of(&shown),
        page(staff, "/console/", &title, body),
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
        }
        Err(error) => Err(error),
    };
    match saved {
        Ok(_) => Ok(see_other(&format!("/console/pets/{id}"))),
        Err(error) => pet_answer(&staff, &state, id, None, Some(error)).await,
    }
}

/// The order form's field.
#[derive(Debug, Deserialize)]
pub(super) struct OrderFields {
    quantity: String,
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
    let placed = match Quantity::new(quantity).map_err(|e| DomainError::from(e).into()) {
        Ok(quantity) => {
            state
                .write(move |shop| {
                    shop.orders()
                        .place(caller, NewOrder::new(id, quantity), None)
                })
                .await
        }
        Err(error) => Err(error),
    };
    match placed {
        Ok(_) => Ok(see_other("/console/orders?status=open")),
        Err(error) => pet_answer(&staff, &state, id, None, Some(error)).await,
    }
}

/// `POST /console/pets/{petId}/delete`.
pub(super) async fn delete_pet(
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Submitted<VersionOnly>,
) -> Answer {
    let Submitted { staff, fields } = form;
    let id: PetId = parsed(&id)?;
    let caller = staff.caller();
    let condition = unchanged::<Pet>(fields.version);
    let deleted = state
        .write(move |shop| shop.pets().delete(caller, id, condition.clone()))
        .await;
    match deleted {
        Ok(()) => Ok(see_other("/console/")),
        Err(error) => pet_answer(&staff, &state, id, None, Some(error)).await,
    }
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
            table {
                thead { tr {
                    th scope="col" { "When" } th scope="col" { "What" } th scope="col" { "Units" }
                    th scope="col" { "Available after" } th scope="col" { "In open orders after" }
                    th scope="col" { "By" } th scope="col" { "Why" }
                } }
                tbody {
                    @for m in movements {
                        tr {
                            td { (m.time.format("%Y-%m-%d %H:%M:%S")) }
                            td { (m.kind.as_str().replace('_', " ")) }
                            td { (signed(m.available_change, m.committed_change)) }
                            td { (m.available_after.get()) }
                            td { (m.committed_after.get()) }
                            td { @if let Some(actor) = &m.actor { (actor.to_string()) } @else { "unknown" } }
                            td {
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

//! What cannot be undone: deleting a pet, a category or a subscription, cancelling an order,
//! revoking a key. Each is asked first on a page of its own (`GET` of the action's address,
//! so it works with script and without, and survives a reload), which says what will
//! happen; its form makes the change, if the thing is still as the question showed it.

use std::fmt::Display;
use std::str::FromStr;

use actix_web::{HttpRequest, web};
use maud::{Markup, html};
use petstore_core::{
    ApiKey, Caller, Category, CategoryId, DomainError, KeyId, Order, OrderId, Pet, PetId,
    ValidationError, Webhook, WebhookId,
};

use super::refused::{Refusal, message};
use super::reply::{Answer, VersionOnly, html, parsed, see_other_saying, status_of, unchanged};
use super::session::Submitted;
use super::view::{page, token_field, version_of};
use super::visitor::{Staff, Visit, Visitor};
use crate::auth::key_revoked;
use crate::state::{AppState, PetService};

/// The question asked before a removal.
pub(super) struct Question {
    /// The section of the console it belongs to.
    section: &'static str,
    /// What it is about, in words ("Rex", "the category Dogs").
    subject: String,
    /// The question ("Delete Rex?").
    title: String,
    /// What will happen.
    consequence: String,
    /// The button that makes the change.
    button: String,
    /// Where "keep it" goes.
    back: String,
}

/// A kind of thing the console removes, asked first.
pub(super) trait Removal: 'static {
    /// Its id, as its address names it.
    type Id: FromStr<Err = ValidationError> + Display + Copy + Send + 'static;
    /// The thing, as the question shows it (its version is what the answer must still find).
    type Thing: crate::json::WriteJson + Send + 'static;

    /// Reads it, as the session may see it.
    fn read(
        shop: &PetService<'_>,
        caller: Caller,
        id: Self::Id,
    ) -> Result<Self::Thing, DomainError>;

    /// Removes it, if `unchanged` holds for it as it is.
    fn remove(
        shop: &PetService<'_>,
        caller: Caller,
        id: Self::Id,
        unchanged: &dyn Fn(&Self::Thing) -> bool,
    ) -> Result<(), DomainError>;

    /// The question about it.
    fn question(thing: &Self::Thing) -> Question;

    /// Where the console goes once it is removed, and what it says there.
    fn done(thing: &Self::Thing) -> (String, String);

    /// What else follows its removal on this node.
    fn after(_state: &AppState, _id: Self::Id, _caller: Caller) {}
}

fn ask_page(
    staff: &Staff,
    req: &HttpRequest,
    question: &Question,
    version: &str,
    refused: Option<&Refusal>,
) -> Markup {
    let body = html! {
        (message(refused, &question.subject))
        p { (question.consequence) " This cannot be undone." }
        div.actions {
            form.inline method="post" action=(req.path()) {
                (token_field(staff))
                input type="hidden" name="version" value=(version);
                button.danger type="submit" { (question.button) }
            }
            a.button.plain href=(question.back) { "No, keep it" }
        }
    };
    page(staff, question.section, &question.title, body)
}

/// The question's page about `thing`; with `refused` when an answer to it was refused, with
/// the refusal's status.
fn asked<R: Removal>(
    staff: &Staff,
    req: &HttpRequest,
    thing: &R::Thing,
    refused: Option<Refusal>,
) -> Answer {
    let question = R::question(thing);
    let markup = ask_page(staff, req, &question, &version_of(thing), refused.as_ref());
    Ok(html(status_of(refused.as_ref()), markup))
}

/// `GET` of a removal's address: its question.
pub(super) async fn ask<R: Removal>(
    visit: Visit,
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Answer {
    let id: R::Id = parsed(&id)?;
    let (staff, thing) = Visitor::from(visit)
        .read(&state, move |shop, caller| R::read(shop, caller, id))
        .await?;
    asked::<R>(&staff, &req, &thing, None)
}

/// `POST` to a removal's address: the answer to its question. The thing is read first, for
/// what the console says after (or the question again, as it is now, after a refusal).
pub(super) async fn remove<R: Removal>(
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Submitted<VersionOnly>,
) -> Answer {
    let Submitted { staff, fields } = form;
    let id: R::Id = parsed(&id)?;
    let caller = staff.caller();
    let thing = state.read(move |shop| R::read(shop, caller, id)).await?;
    let condition = unchanged::<R::Thing>(fields.version);
    let removed = state
        .write(move |shop| R::remove(shop, caller, id, &condition))
        .await;
    match removed {
        Ok(()) => {
            R::after(&state, id, caller);
            let (location, said) = R::done(&thing);
            Ok(see_other_saying(&location, &said))
        }
        Err(error) => asked::<R>(&staff, &req, &thing, Some(error.into())),
    }
}

/// Deleting a pet.
pub(super) struct PetRemoval;

impl Removal for PetRemoval {
    type Id = PetId;
    type Thing = Pet;

    fn read(shop: &PetService<'_>, _: Caller, id: PetId) -> Result<Pet, DomainError> {
        shop.pets().get(id)
    }

    fn remove(
        shop: &PetService<'_>,
        caller: Caller,
        id: PetId,
        unchanged: &dyn Fn(&Pet) -> bool,
    ) -> Result<(), DomainError> {
        shop.pets().delete(caller, id, unchanged)
    }

    fn question(pet: &Pet) -> Question {
        let name = pet.name.as_str();
        Question {
            section: "/console/pets",
            subject: name.to_owned(),
            title: format!("Delete {name}?"),
            consequence: format!(
                "{name} leaves the catalogue with its stock entry; its stock movements stay in \
                 the ledger. A pet in open orders cannot be deleted."
            ),
            button: format!("Delete {name}"),
            back: format!("/console/pets/{}", pet.id),
        }
    }

    fn done(pet: &Pet) -> (String, String) {
        (
            "/console/pets".into(),
            format!("Deleted {}.", pet.name.as_str()),
        )
    }
}

/// Deleting a category.
pub(super) struct CategoryRemoval;

impl Removal for CategoryRemoval {
    type Id = CategoryId;
    type Thing = Category;

    fn read(shop: &PetService<'_>, _: Caller, id: CategoryId) -> Result<Category, DomainError> {
        shop.categories().get(id)
    }

    fn remove(
        shop: &PetService<'_>,
        caller: Caller,
        id: CategoryId,
        unchanged: &dyn Fn(&Category) -> bool,
    ) -> Result<(), DomainError> {
        shop.categories().delete(caller, id, unchanged)
    }

    fn question(category: &Category) -> Question {
        let name = category.name.as_str();
        Question {
            section: "/console/categories",
            subject: format!("the category {name}"),
            title: format!("Delete the category {name}?"),
            consequence: "Only a category without pets can be deleted.".into(),
            button: format!("Delete {name}"),
            back: "/console/categories".into(),
        }
    }

    fn done(category: &Category) -> (String, String) {
        let said = format!("Deleted the category {}.", category.name.as_str());
        ("/console/categories".into(), said)
    }
}

/// Cancelling an order.
pub(super) struct OrderRemoval;

impl Removal for OrderRemoval {
    type Id = OrderId;
    type Thing = Order;

    fn read(shop: &PetService<'_>, caller: Caller, id: OrderId) -> Result<Order, DomainError> {
        shop.orders().get(caller, id)
    }

    fn remove(
        shop: &PetService<'_>,
        caller: Caller,
        id: OrderId,
        unchanged: &dyn Fn(&Order) -> bool,
    ) -> Result<(), DomainError> {
        shop.orders().cancel(caller, id, unchanged)
    }

    fn question(order: &Order) -> Question {
        Question {
            section: "/console/orders",
            subject: format!("order {}", order.id),
            title: format!("Cancel order {}?", order.id),
            consequence: "The order is removed and its units go back in stock.".into(),
            button: format!("Cancel order {}", order.id),
            back: "/console/orders".into(),
        }
    }

    fn done(order: &Order) -> (String, String) {
        let said = format!("Cancelled order {}: its units are back in stock.", order.id);
        ("/console/orders".into(), said)
    }
}

/// Revoking a key.
pub(super) struct KeyRemoval;

impl Removal for KeyRemoval {
    type Id = KeyId;
    type Thing = ApiKey;

    fn read(shop: &PetService<'_>, caller: Caller, id: KeyId) -> Result<ApiKey, DomainError> {
        shop.keys().get(caller, id)
    }

    fn remove(
        shop: &PetService<'_>,
        caller: Caller,
        id: KeyId,
        unchanged: &dyn Fn(&ApiKey) -> bool,
    ) -> Result<(), DomainError> {
        shop.keys().revoke(caller, id, unchanged)
    }

    fn question(key: &ApiKey) -> Question {
        let name = key.name.as_str();
        Question {
            section: "/console/keys",
            subject: format!("the key \u{201c}{name}\u{201d}"),
            title: format!("Revoke the key \u{201c}{name}\u{201d}?"),
            consequence: format!(
                "The key stops working at once, for every client that uses it, and its console \
                 sessions end. It is a {} key.",
                key.role.as_str()
            ),
            button: format!("Revoke {name}"),
            back: "/console/keys".into(),
        }
    }

    fn done(key: &ApiKey) -> (String, String) {
        let said = format!(
            "Revoked the key \u{201c}{}\u{201d}: it no longer works.",
            key.name.as_str()
        );
        ("/console/keys".into(), said)
    }

    /// The node forgets the key at once, as the API's revocation does.
    fn after(state: &AppState, id: KeyId, caller: Caller) {
        key_revoked(state, id, caller);
    }
}

/// Deleting a webhook subscription.
pub(super) struct WebhookRemoval;

impl Removal for WebhookRemoval {
    type Id = WebhookId;
    type Thing = Webhook;

    fn read(shop: &PetService<'_>, caller: Caller, id: WebhookId) -> Result<Webhook, DomainError> {
        shop.webhooks().get(caller, id)
    }

    fn remove(
        shop: &PetService<'_>,
        caller: Caller,
        id: WebhookId,
        unchanged: &dyn Fn(&Webhook) -> bool,
    ) -> Result<(), DomainError> {
        shop.webhooks().delete(caller, id, unchanged)
    }

    fn question(hook: &Webhook) -> Question {
        Question {
            section: "/console/webhooks",
            subject: format!("subscription {}", hook.id),
            title: format!("Delete subscription {}?", hook.id),
            consequence: format!(
                "Events stop going to {}, those not delivered yet among them.",
                hook.url
            ),
            button: format!("Delete subscription {}", hook.id),
            back: format!("/console/webhooks/{}", hook.id),
        }
    }

    fn done(hook: &Webhook) -> (String, String) {
        (
            "/console/webhooks".into(),
            format!("Deleted subscription {}.", hook.id),
        )
    }
}

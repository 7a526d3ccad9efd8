//! The pets list: filter it, create a pet. One pet's page is `pet.rs`, the categories'
//! page `categories.rs`.

use std::collections::HashMap;

use actix_web::web;
use maud::{Markup, html};
use petstore_core::{
    Category, CategoryId, CategoryQuery, DomainError, InventoryQuery, Name, NewPet, PageSize, Pet,
    PetId, PetQuery, PetSort,
};
use serde::Deserialize;

use super::lists::{ListFilter, Position, category_select, level, placed, status_select};
use super::pager::{Place, pager};
use super::refused::{Input, Refusal, input, message, note_at};
use super::reply::{Answer, html, parsed, see_other_saying, status_of};
use super::session::Submitted;
use super::view::{page, token_field, version_field};
use super::visitor::{Staff, Visit, Visitor};
use crate::error::ErrorCode;
use crate::state::{AppState, PetService};

/// Every category, for names and choices (a shop has far fewer than a page's 100).
pub(super) fn all_categories() -> CategoryQuery {
    CategoryQuery {
        limit: PageSize::MAX_PAGE,
        ..CategoryQuery::default()
    }
}

/// The names of the pets `query` finds (at most a page's worth), for pages that show other
/// things of a pet (its stock, its orders): one read beside theirs.
pub(super) fn pet_names(
    shop: &PetService<'_>,
    query: &PetQuery,
) -> Result<HashMap<PetId, String>, DomainError> {
    Ok(shop
        .pets()
        .list(query)?
        .items
        .into_iter()
        .map(|pet| (pet.id, pet.name.as_str().to_owned()))
        .collect())
}

/// The pets list's address.
const LIST: &str = "/console/pets";

/// `GET /console/pets`: the pets, filtered.
pub(super) async fn pets_page(
    visit: Visit,
    state: web::Data<AppState>,
    filter: web::Query<ListFilter>,
) -> Answer {
    pets_answer(visit.into(), &state, &filter, None).await
}

async fn pets_answer(
    visitor: Visitor,
    state: &AppState,
    filter: &ListFilter,
    refused: Option<(Refusal, PetFields)>,
) -> Answer {
    let asked = filter.asked()?;
    let low_at = filter.low_at()?;
    let (staff, (pets, place, mut levels, categories)) = visitor
        .read(state, move |shop, _| {
            let rows = asked.rows();
            // The entries of the same filter are the same pets': their units, in one trip.
            let levels: HashMap<PetId, u32> = shop
                .inventory()
                .list(&InventoryQuery::of_pets(&rows))?
                .items
                .into_iter()
                .map(|item| (item.pet_id, item.quantity.get()))
                .collect();
            let pets = shop.pets().list(&rows)?.items;
            let (pets, place) = placed(shop, &asked, pets, Position::of_pet)?;
            Ok((
                pets,
                place,
                levels,
                shop.categories().list(&all_categories())?.items,
            ))
        })
        .await?;
    let beside = filter.beside(
        LIST,
        pets.first().map(Position::of_pet),
        pets.last().map(Position::of_pet),
    );
    let adding = refused
        .as_ref()
        .map(|(refusal, typed)| (refusal, Some(typed)));
    let body = html! {
        (filter.form("/console/pets", &categories))
        table.cards {
            caption.sr-only { "Pets" }
            thead { tr { (filter.sorted_heading(LIST, "Id", PetSort::Added)) (filter.sorted_heading(LIST, "Name", PetSort::Name)) th scope="col" { "Category" } th scope="col" { "Status" } th scope="col" { "Units to order" } } }
            tbody {
                @for pet in &pets {
                    tr {
                        td data-label="Id" { (pet.id) }
                        td data-label="Name" { a href={ "/console/pets/" (pet.id) } { (pet.name.as_str()) } }
                        td data-label="Category" { (category_name(&categories, pet.category_id)) }
                        td data-label="Status" { (pet.status.as_str()) }
                        td data-label="Units to order" {
                            @if let Some(units) = levels.remove(&pet.id) { (level(units, low_at)) }
                        }
                    }
                }
            }
        }
        @if pets.is_empty() && place == Place::of(0, 0, 0) { p { "No pet matches." } }
        (pager(place, &beside))
        h2 { "Add a pet" }
        (pet_form(&staff, "/console/pets", None, &categories, "Add the pet", adding))
    };
    let status = status_of(refused.as_ref().map(|(refusal, _)| refusal));
    Ok(html(status, page(&staff, "/console/pets", "Pets", body)))
}

fn category_name(categories: &[Category], id: CategoryId) -> String {
    categories
        .iter()
        .find(|category| category.id == id)
        .map_or_else(
            || format!("#{id}"),
            |category| category.name.as_str().to_owned(),
        )
}

/// The form that creates a pet (`pet` absent) or edits one, with the version it was read at;
/// after a refusal, with what was typed (absent when the form must show the pet as it is
/// now) and the refusal beside its field.
pub(super) fn pet_form(
    staff: &Staff,
    action: &str,
    pet: Option<&Pet>,
    categories: &[Category],
    submit: &str,
    refused: Option<(&Refusal, Option<&PetFields>)>,
) -> Markup {
    let typed = refused.and_then(|(_, typed)| typed);
    let refusal = refused.map(|(refusal, _)| refusal);
    let name = typed.map_or_else(
        || pet.map(|p| p.name.as_str()).unwrap_or_default(),
        |t| t.name.as_str(),
    );
    let category = typed.map_or_else(
        || pet.map(|p| p.category_id.to_string()).unwrap_or_default(),
        |t| t.category.clone(),
    );
    let status = typed.map_or_else(
        || pet.map_or("available", |p| p.status.as_str()),
        |t| t.status.as_str(),
    );
    let subject = pet.map_or("the new pet", |p| p.name.as_str());
    html! {
        form.stacked method="post" action=(action) {
            (message(refusal, subject))
            (token_field(staff))
            @match typed {
                Some(typed) => input type="hidden" name="version" value=(typed.version);,
                None => @if let Some(pet) = pet { (version_field(pet)) },
            }
            label for="pet-name" { "Name" }
            (input(refusal, &Input::text("pet-name", "name", name).required().max_chars(100)))
            (note_at(refusal, "name", "pet-name", subject))
            label for="pet-category" { "Category" }
            (category_select("pet-category", "category", categories, false, &category))
            (note_at(refusal, "category", "pet-category", subject))
            label for="pet-status" { "Status" }
            (status_select("pet-status", "status", None, false, status))
            button type="submit" { (submit) }
        }
    }
}

/// A pet's fields, as its form sends them.
#[derive(Debug, Deserialize)]
pub(super) struct PetFields {
    name: String,
    category: String,
    status: String,
    #[serde(default)]
    pub(super) version: String,
}

impl PetFields {
    /// Where the API's refusals of a pet belong on its form.
    pub(super) const PLACES: &[(ErrorCode, &'static str)] = &[
        (ErrorCode::ValidationFailed, "name"),
        (ErrorCode::UnknownCategory, "category"),
    ];

    pub(super) fn new_pet(&self) -> Result<NewPet, Refusal> {
        Ok(NewPet {
            name: Name::parse(&self.name)
                .map_err(|e| Refusal::at("name")(DomainError::from(e).into()))?,
            category_id: parsed(&self.category).map_err(Refusal::at("category"))?,
            status: parsed(&self.status).map_err(Refusal::at("status"))?,
        })
    }
}

/// `POST /console/pets`.
pub(super) async fn create_pet(state: web::Data<AppState>, form: Submitted<PetFields>) -> Answer {
    let Submitted { staff, fields } = form;
    let caller = staff.caller();
    let made = match fields.new_pet() {
        Ok(new) => state
            .write(move |shop| shop.pets().create(caller, new.clone(), None))
            .await
            .map_err(|error| Refusal::from(error).placed(PetFields::PLACES)),
        Err(refusal) => Err(refusal),
    };
    match made {
        Ok(_) => Ok(see_other_saying(
            "/console/pets",
            &format!("Added {}.", fields.name.trim()),
        )),
        Err(refusal) => {
            pets_answer(
                staff.into(),
                &state,
                &ListFilter::default(),
                Some((refusal, fields)),
            )
            .await
        }
    }
}

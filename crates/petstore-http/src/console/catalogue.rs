//! The pets list: filter it, create a pet. One pet's page is `pet.rs`, the categories'
//! page `categories.rs`.

use std::collections::HashMap;

use actix_web::web;
use maud::{Markup, html};
use petstore_core::{
    Category, CategoryId, CategoryQuery, DomainError, Name, NewPet, PageSize, Pet, PetId, PetQuery,
    PetStatus,
};
use serde::Deserialize;

use super::refused::{Input, Refusal, input, message, note_at};
use super::reply::{Answer, html, parsed, see_other_saying};
use super::session::{Staff, Submitted};
use super::view::{page, token_field, version_field};
use crate::error::{ApiError, ErrorCode};
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

/// The pets list's filters, as its form sends them.
#[derive(Debug, Default, Clone, Deserialize)]
pub(super) struct PetFilter {
    #[serde(default)]
    status: String,
    #[serde(default)]
    category: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    after: String,
}

impl PetFilter {
    fn query(&self) -> Result<PetQuery, ApiError> {
        let optional = |text: &str| (!text.trim().is_empty()).then(|| text.to_owned());
        let status = optional(&self.status).map(|s| parsed(&s)).transpose()?;
        let category = optional(&self.category).map(|c| parsed(&c)).transpose()?;
        let after = optional(&self.after).map(|a| parsed(&a)).transpose()?;
        Ok(
            PetQuery::new(status, category, optional(&self.name), Vec::new())
                .map_err(|e| ApiError::invalid_parameter(e.to_string()))?
                .page(after, PageSize::MAX_PAGE),
        )
    }
}

/// `GET /console/`: the pets, filtered.
pub(super) async fn pets_page(
    staff: Staff,
    state: web::Data<AppState>,
    filter: web::Query<PetFilter>,
) -> Answer {
    pets_answer(&staff, &state, &filter, None).await
}

async fn pets_answer(
    staff: &Staff,
    state: &AppState,
    filter: &PetFilter,
    refused: Option<(Refusal, PetFields)>,
) -> Answer {
    let query = filter.query()?;
    let (pets, categories) = state
        .read(move |shop| {
            Ok((
                shop.pets().list(&query)?,
                shop.categories().list(&all_categories())?.items,
            ))
        })
        .await?;
    let next = pets.next_after.map(|after| {
        let mut next = filter.clone();
        next.after = after.to_string();
        serde_html_form::to_string(&[
            ("status", next.status),
            ("category", next.category),
            ("name", next.name),
            ("after", next.after),
        ])
        .unwrap_or_default()
    });
    let adding = refused
        .as_ref()
        .map(|(refusal, typed)| (refusal, Some(typed)));
    let body = html! {
        form.filters method="get" action="/console/" role="search" {
            div {
                label for="filter-status" { "Status" }
                (status_select("filter-status", "status", None, true, &filter.status))
            }
            div {
                label for="filter-category" { "Category" }
                (category_select("filter-category", "category", &categories, true, &filter.category))
            }
            div {
                label for="filter-name" { "Name contains" }
                input #filter-name name="name" type="search" value=(filter.name);
            }
            button type="submit" { "Filter" }
        }
        table.cards {
            caption.sr-only { "Pets" }
            thead { tr { th scope="col" { "Id" } th scope="col" { "Name" } th scope="col" { "Category" } th scope="col" { "Status" } } }
            tbody {
                @for pet in &pets.items {
                    tr {
                        td data-label="Id" { (pet.id) }
                        td data-label="Name" { a href={ "/console/pets/" (pet.id) } { (pet.name.as_str()) } }
                        td data-label="Category" { (category_name(&categories, pet.category_id)) }
                        td data-label="Status" { (pet.status.as_str()) }
                    }
                }
            }
        }
        @if pets.items.is_empty() { p { "No pet matches." } }
        @if let Some(next) = next { p { a href={ "/console/?" (next) } { "Next page" } } }
        h2 { "Add a pet" }
        (pet_form(staff, "/console/pets", None, &categories, "Add the pet", adding))
    };
    let status = refused
        .as_ref()
        .map_or(actix_web::http::StatusCode::OK, |(refusal, _)| {
            refusal.error().status()
        });
    Ok(html(status, page(staff, "/console/", "Pets", body)))
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

fn status_select(
    id: &str,
    name: &str,
    current: Option<PetStatus>,
    any: bool,
    chosen: &str,
) -> Markup {
    html! {
        select id=(id) name=(name) {
            @if any { option value="" { "Any" } }
            @for status in PetStatus::ALL {
                @let selected = current == Some(status) || chosen == status.as_str();
                option value=(status.as_str()) selected[selected] { (status.as_str()) }
            }
        }
    }
}

fn category_select(
    id: &str,
    name: &str,
    categories: &[Category],
    any: bool,
    chosen: &str,
) -> Markup {
    html! {
        select id=(id) name=(name) required[!any] {
            @if any { option value="" { "Any" } }
            @for category in categories {
                @let value = category.id.to_string();
                option value=(value) selected[value == chosen] { (category.name.as_str()) }
            }
        }
    }
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
            "/console/",
            &format!("Added {}.", fields.name.trim()),
        )),
        Err(refusal) => {
            pets_answer(
                &staff,
                &state,
                &PetFilter::default(),
                Some((refusal, fields)),
            )
            .await
        }
    }
}

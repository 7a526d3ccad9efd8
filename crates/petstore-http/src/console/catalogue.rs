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

use super::reply::{Answer, Shown, html, parsed, see_other, status_of};
use super::session::{Staff, Submitted};
use super::view::{page, refusal, token_field, version_field};
use crate::error::ApiError;
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

async fn pets_answer(staff: &Staff, state: &AppState, filter: &PetFilter, shown: Shown) -> Answer {
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
    let body = html! {
        @if let Some(error) = &shown { (refusal(error)) }
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
        table {
            caption.sr-only { "Pets" }
            thead { tr { th scope="col" { "Id" } th scope="col" { "Name" } th scope="col" { "Category" } th scope="col" { "Status" } } }
            tbody {
                @for pet in &pets.items {
                    tr {
                        td { (pet.id) }
                        td { a href={ "/console/pets/" (pet.id) } { (pet.name.as_str()) } }
                        td { (category_name(&categories, pet.category_id)) }
                        td { (pet.status.as_str()) }
                    }
                }
            }
        }
        @if pets.items.is_empty() { p { "No pet matches." } }
        @if let Some(next) = next { p { a href={ "/console/?" (next) } { "Next page" } } }
        h2 { "Add a pet" }
        (pet_form(staff, "/console/pets", None, &categories, "Add the pet"))
    };
    Ok(html(
        status_of(&shown),
        page(staff, "/console/", "Pets", body),
    ))
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

/// The form that creates a pet (`pet` absent) or edits one, with the version it was read at.
pub(super) fn pet_form(
    staff: &Staff,
    action: &str,
    pet: Option<&Pet>,
    categories: &[Category],
    submit: &str,
) -> Markup {
    let category = pet.map(|p| p.category_id.to_string()).unwrap_or_default();
    html! {
        form.stacked method="post" action=(action) {
            (token_field(staff))
            @if let Some(pet) = pet { (version_field(pet)) }
            label for="pet-name" { "Name" }
            input #pet-name name="name" required maxlength="100" value=(pet.map(|p| p.name.as_str()).unwrap_or_default());
            label for="pet-category" { "Category" }
            (category_select("pet-category", "category", categories, false, &category))
            label for="pet-status" { "Status" }
            (status_select("pet-status", "status", pet.map(|p| p.status), false, "available"))
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
    pub(super) fn new_pet(&self) -> Result<NewPet, ApiError> {
        Ok(NewPet {
            name: Name::parse(&self.name).map_err(petstore_core::DomainError::from)?,
            category_id: parsed(&self.category)?,
            status: parsed(&self.status)?,
        })
    }
}

/// `POST /console/pets`.
pub(super) async fn create_pet(state: web::Data<AppState>, form: Submitted<PetFields>) -> Answer {
    let Submitted { staff, fields } = form;
    let caller = staff.caller();
    let made = match fields.new_pet() {
        Ok(new) => {
            state
                .write(move |shop| shop.pets().create(caller, new.clone(), None))
                .await
        }
        Err(error) => Err(error),
    };
    match made {
        Ok(_) => Ok(see_other("/console/")),
        Err(error) => pets_answer(&staff, &state, &PetFilter::default(), Some(error)).await,
    }
}

//! The categories' page: list, create, rename (deleting is in `removals.rs`).

use actix_web::web;
use maud::{Markup, html};
use petstore_core::{Category, CategoryId, Description, DomainError, Name, NewCategory};
use serde::Deserialize;

use super::catalogue::all_categories;
use super::refused::{Input, Refusal, input, message, note_at};
use super::reply::{Answer, html, parsed, see_other_saying, status_of, unchanged};
use super::session::Submitted;
use super::view::{page, token_field, version_field};
use super::visitor::{Staff, Visit, Visitor};
use crate::error::ErrorCode;
use crate::state::AppState;

/// `GET /console/categories`.
pub(super) async fn categories_page(visit: Visit, state: web::Data<AppState>) -> Answer {
    categories_answer(visit.into(), &state, None).await
}

/// A refused category form, with what was typed: the new category's (`None`) or one's.
type Typed = (Refusal, Option<CategoryId>, CategoryFields);

async fn categories_answer(visitor: Visitor, state: &AppState, refused: Option<Typed>) -> Answer {
    let (staff, categories) = visitor
        .read(state, move |shop, _| {
            Ok(shop.categories().list(&all_categories())?.items)
        })
        .await?;
    let staff = &staff;
    let for_row = |id: CategoryId| match &refused {
        Some((refusal, Some(at), typed)) if *at == id => Some((refusal, typed)),
        _ => None,
    };
    let adding = match &refused {
        Some((refusal, None, typed)) => Some((refusal, typed)),
        _ => None,
    };
    let body = html! {
        table.cards {
            caption.sr-only { "Categories" }
            thead { tr { th scope="col" { "Id" } th scope="col" { "Name and description" } th scope="col" { "Delete" } } }
            tbody {
                @for category in &categories {
                    (category_row(staff, category, for_row(category.id)))
                }
            }
        }
        h2 { "Add a category" }
        (category_form(staff, adding))
    };
    let status = status_of(refused.as_ref().map(|(refusal, _, _)| refusal));
    Ok(html(
        status,
        page(staff, "/console/categories", "Categories", body),
    ))
}

/// One category's row: its fields to edit in place (what was typed, after a refusal other
/// than a stale edit), and the way to delete it.
fn category_row(
    staff: &Staff,
    category: &Category,
    refused: Option<(&Refusal, &CategoryFields)>,
) -> Markup {
    let action = format!("/console/categories/{}", category.id);
    let field = format!("category-{}", category.id);
    let name = category.name.as_str();
    let refusal = refused.map(|(refusal, _)| refusal);
    let stale = refusal.is_some_and(|r| r.error().code() == ErrorCode::PreconditionFailed);
    let typed = refused.map(|(_, typed)| typed).filter(|_| !stale);
    let subject = format!("the category {name}");
    let name_id = format!("{field}-name");
    html! {
        tr {
            td data-label="Id" { (category.id) }
            td data-label="Name and description" {
                (message(refusal, &subject))
                form.inline method="post" action=(action) {
                    (token_field(staff))
                    @match typed {
                        Some(typed) => input type="hidden" name="version" value=(typed.version);,
                        None => (version_field(category)),
                    }
                    label.sr-only for={ (field) "-name" } { "Name of " (name) }
                    (input(refusal, &Input::text(&name_id, "name", typed.map_or(name, |t| t.name.as_str())).required().max_chars(100)))
                    label.sr-only for={ (field) "-description" } { "Description of " (name) }
                    input id={ (field) "-description" } name="description" maxlength="1000"
                        value=(typed.map_or_else(|| category.description.as_ref().map_or("", |d| d.as_str()), |t| t.description.as_str()));
                    button.plain type="submit" { "Save" }
                }
                (note_at(refusal, "name", &format!("{field}-name"), &subject))
            }
            td data-label="Delete" {
                a.button.danger href={ (action) "/delete" } { "Delete " (name) "…" }
            }
        }
    }
}

/// The form that adds a category, with what was typed after a refusal.
fn category_form(staff: &Staff, refused: Option<(&Refusal, &CategoryFields)>) -> Markup {
    let refusal = refused.map(|(refusal, _)| refusal);
    let typed = refused.map(|(_, typed)| typed);
    html! {
        form.stacked method="post" action="/console/categories" {
            (message(refusal, "the new category"))
            (token_field(staff))
            label for="category-name" { "Name" }
            (input(refusal, &Input::text("category-name", "name", typed.map_or("", |t| t.name.as_str())).required().max_chars(100)))
            (note_at(refusal, "name", "category-name", "the new category"))
            label for="category-description" { "Description" }
            (input(refusal, &Input::text("category-description", "description", typed.map_or("", |t| t.description.as_str())).max_chars(1000)))
            (note_at(refusal, "description", "category-description", "the new category"))
            button type="submit" { "Add the category" }
        }
    }
}

/// A category's fields, as its form sends them.
#[derive(Debug, Deserialize)]
pub(super) struct CategoryFields {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    version: String,
}

impl CategoryFields {
    /// Where the API's refusals of a category belong on its form.
    const PLACES: &[(ErrorCode, &'static str)] = &[
        (ErrorCode::CategoryExists, "name"),
        (ErrorCode::ValidationFailed, "name"),
    ];

    fn new_category(&self) -> Result<NewCategory, Refusal> {
        let description = match self.description.trim() {
            "" => None,
            text => Some(
                Description::parse(text)
                    .map_err(|e| Refusal::at("description")(DomainError::from(e).into()))?,
            ),
        };
        Ok(NewCategory {
            name: Name::parse(&self.name)
                .map_err(|e| Refusal::at("name")(DomainError::from(e).into()))?,
            description,
        })
    }
}

/// `POST /console/categories`.
pub(super) async fn create_category(
    state: web::Data<AppState>,
    form: Submitted<CategoryFields>,
) -> Answer {
    let Submitted { staff, fields } = form;
    let caller = staff.caller();
    let made = match fields.new_category() {
        Ok(new) => state
            .write(move |shop| shop.categories().create(caller, new.clone(), None))
            .await
            .map_err(|error| Refusal::from(error).placed(CategoryFields::PLACES)),
        Err(refusal) => Err(refusal),
    };
    match made {
        Ok(_) => Ok(see_other_saying(
            "/console/categories",
            &format!("Added the category {}.", fields.name.trim()),
        )),
        Err(refusal) => {
            categories_answer(staff.into(), &state, Some((refusal, None, fields))).await
        }
    }
}

/// `POST /console/categories/{categoryId}`.
pub(super) async fn replace_category(
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Submitted<CategoryFields>,
) -> Answer {
    let Submitted { staff, fields } = form;
    let id: CategoryId = parsed(&id)?;
    let caller = staff.caller();
    let saved = match fields.new_category() {
        Ok(new) => {
            let condition = unchanged::<Category>(fields.version.clone());
            state
                .write(move |shop| {
                    shop.categories()
                        .replace(caller, id, new.clone(), condition.clone())
                })
                .await
                .map_err(|error| Refusal::from(error).placed(CategoryFields::PLACES))
        }
        Err(refusal) => Err(refusal),
    };
    match saved {
        Ok(category) => Ok(see_other_saying(
            "/console/categories",
            &format!("Saved the category {}.", category.name.as_str()),
        )),
        Err(refusal) => {
            categories_answer(staff.into(), &state, Some((refusal, Some(id), fields))).await
        }
    }
}

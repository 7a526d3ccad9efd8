//! The categories' page: list, create, rename, delete.

use actix_web::web;
use maud::html;
use petstore_core::{Category, CategoryId, Description, DomainError, Name, NewCategory};
use serde::Deserialize;

use super::catalogue::all_categories;
use super::reply::{Answer, Shown, VersionOnly, html, parsed, see_other, status_of, unchanged};
use super::session::{Staff, Submitted};
use super::view::{page, refusal, token_field, version_field};
use crate::error::ApiError;
use crate::state::AppState;

/// `GET /console/categories`.
pub(super) async fn categories_page(staff: Staff, state: web::Data<AppState>) -> Answer {
    categories_answer(&staff, &state, None).await
}

async fn categories_answer(staff: &Staff, state: &AppState, shown: Shown) -> Answer {
    let categories = state
        .read(move |shop| Ok(shop.categories().list(&all_categories())?.items))
        .await?;
    let body = html! {
        @if let Some(error) = &shown { (refusal(error)) }
        table {
            caption.sr-only { "Categories" }
            thead { tr { th scope="col" { "Id" } th scope="col" { "Name and description" } th scope="col" { "Delete" } } }
            tbody {
                @for category in &categories {
                    @let action = format!("/console/categories/{}", category.id);
                    @let label = format!("category-{}", category.id);
                    tr {
                        td { (category.id) }
                        td {
                            form.inline method="post" action=(action) {
                                (token_field(staff))
                                (version_field(category))
                                label.sr-only for={ (label) "-name" } { "Name of " (category.name.as_str()) }
                                input id={ (label) "-name" } name="name" required maxlength="100" value=(category.name.as_str());
                                label.sr-only for={ (label) "-description" } { "Description of " (category.name.as_str()) }
                                input id={ (label) "-description" } name="description" maxlength="1000" value=(category.description.as_ref().map_or("", |d| d.as_str()));
                                button.plain type="submit" { "Save" }
                            }
                        }
                        td {
                            form.inline method="post" action={ (action) "/delete" } {
                                (token_field(staff))
                                (version_field(category))
                                button.danger type="submit" { "Delete " (category.name.as_str()) }
                            }
                        }
                    }
                }
            }
        }
        h2 { "Add a category" }
        form.stacked method="post" action="/console/categories" {
            (token_field(staff))
            label for="category-name" { "Name" }
            input #category-name name="name" required maxlength="100";
            label for="category-description" { "Description" }
            input #category-description name="description" maxlength="1000";
            button type="submit" { "Add the category" }
        }
    };
    Ok(html(
        status_of(&shown),
        page(staff, "/console/categories", "Categories", body),
    ))
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
    fn new_category(&self) -> Result<NewCategory, ApiError> {
        let description = match self.description.trim() {
            "" => None,
            text => Some(Description::parse(text).map_err(DomainError::from)?),
        };
        Ok(NewCategory {
            name: Name::parse(&self.name).map_err(DomainError::from)?,
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
        Ok(new) => {
            state
                .write(move |shop| shop.categories().create(caller, new.clone(), None))
                .await
        }
        Err(error) => Err(error),
    };
    match made {
        Ok(_) => Ok(see_other("/console/categories")),
        Err(error) => categories_answer(&staff, &state, Some(error)).await,
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
        }
        Err(error) => Err(error),
    };
    match saved {
        Ok(_) => Ok(see_other("/console/categories")),
        Err(error) => categories_answer(&staff, &state, Some(error)).await,
    }
}

/// `POST /console/categories/{categoryId}/delete`.
pub(super) async fn delete_category(
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Submitted<VersionOnly>,
) -> Answer {
    let Submitted { staff, fields } = form;
    let id: CategoryId = parsed(&id)?;
    let caller = staff.caller();
    let condition = unchanged::<Category>(fields.version);
    let deleted = state
        .write(move |shop| shop.categories().delete(caller, id, condition.clone()))
        .await;
    match deleted {
        Ok(()) => Ok(see_other("/console/categories")),
        Err(error) => categories_answer(&staff, &state, Some(error)).await,
    }
}

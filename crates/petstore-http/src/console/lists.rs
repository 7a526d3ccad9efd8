//! What the pets list and the stock list share: one filter (status, category, name, and the
//! units that can be ordered: running low or out), its form, and the marks of a level.

use maud::{Markup, html};
use petstore_core::{Category, PageSize, PetQuery, PetStatus, Stock};
use serde::{Deserialize, Serialize};

use super::reply::parsed;
use crate::error::ApiError;

/// The level at or below which a pet runs low, until staff set another in the filter.
pub(super) const LOW_AT: u32 = 3;

/// A list's filter, as its form and its links send it.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
pub(super) struct ListFilter {
    #[serde(default)]
    pub(super) status: String,
    #[serde(default)]
    pub(super) category: String,
    #[serde(default)]
    pub(super) name: String,
    /// `low`, `out`, or empty for any level.
    #[serde(default)]
    pub(super) stock: String,
    /// The level at or below which a pet runs low (empty: [`LOW_AT`]).
    #[serde(default)]
    pub(super) low_at: String,
    #[serde(default)]
    pub(super) after: String,
}

impl ListFilter {
    /// The level at or below which a pet runs low.
    pub(super) fn low_at(&self) -> Result<u32, ApiError> {
        low_at(&self.low_at)
    }

    /// The pets the filter finds, a page of 100 from its position.
    pub(super) fn query(&self) -> Result<PetQuery, ApiError> {
        let optional = |text: &str| (!text.trim().is_empty()).then(|| text.trim().to_owned());
        let status = optional(&self.status).map(|s| parsed(&s)).transpose()?;
        let category = optional(&self.category).map(|c| parsed(&c)).transpose()?;
        let after = optional(&self.after).map(|a| parsed(&a)).transpose()?;
        let at_most = match self.stock.as_str() {
            "" => None,
            "out" => Some(Stock::ZERO),
            "low" => Some(Stock::from_level(self.low_at()?)),
            _ => {
                return Err(ApiError::invalid_parameter(
                    "stock: must be low, out or empty",
                ));
            }
        };
        Ok(
            PetQuery::new(status, category, optional(&self.name), Vec::new())
                .map_err(|e| ApiError::invalid_parameter(e.to_string()))?
                .stock_at_most(at_most)
                .page(after, PageSize::MAX_PAGE),
        )
    }

    /// The query string of the page after `after`, the filter kept.
    pub(super) fn after(&self, after: i64) -> String {
        let next = Self {
            after: after.to_string(),
            ..self.clone()
        };
        serde_html_form::to_string(&next).unwrap_or_default()
    }

    /// The filter's form, for the list at `action`.
    pub(super) fn form(&self, action: &str, categories: &[Category]) -> Markup {
        html! {
            form.filters method="get" action=(action) role="search" {
                div {
                    label for="filter-status" { "Status" }
                    (status_select("filter-status", "status", None, true, &self.status))
                }
                div {
                    label for="filter-category" { "Category" }
                    (category_select("filter-category", "category", categories, true, &self.category))
                }
                div {
                    label for="filter-name" { "Name contains" }
                    input #filter-name name="name" type="search" value=(self.name);
                }
                div {
                    label for="filter-stock" { "Stock level" }
                    select #filter-stock name="stock" {
                        @for (value, label) in [("", "Any"), ("low", "Running low"), ("out", "Out of stock")] {
                            option value=(value) selected[self.stock == value] { (label) }
                        }
                    }
                }
                div {
                    label for="filter-low-at" { "Low at or below" }
                    input #filter-low-at name="low_at" type="number" min="0" max="1000000"
                        value=(self.low_at().unwrap_or(LOW_AT));
                }
                button type="submit" { "Filter" }
            }
        }
    }
}

/// The level at or below which a pet runs low, as a form sends it (empty: [`LOW_AT`]).
pub(super) fn low_at(text: &str) -> Result<u32, ApiError> {
    match text.trim() {
        "" => Ok(LOW_AT),
        text => text
            .parse::<u32>()
            .ok()
            .filter(|&level| Stock::settable(i64::from(level)).is_ok())
            .ok_or_else(|| {
                ApiError::invalid_parameter("low_at: must be a level from 0 to 1000000")
            }),
    }
}

/// A level of units as a list shows it, marked when out of stock or running low.
pub(super) fn level(units: u32, low_at: u32) -> Markup {
    html! {
        (units)
        @if units == 0 { " " strong.out { "out of stock" } }
        @else if units <= low_at { " " strong.low { "low" } }
    }
}

/// A choice of status (`any`: or none, to filter), `current` or `chosen` selected.
pub(super) fn status_select(
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

/// A choice of category (`any`: or none, to filter), `chosen` selected.
pub(super) fn category_select(
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

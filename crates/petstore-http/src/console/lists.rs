//! What the pets list and the stock list share: one filter (status, category, name, and the
//! units that can be ordered: running low or out), its form, and the marks of a level.

use maud::{Markup, html};
use petstore_core::{Category, DomainError, PageSize, PetId, PetQuery, PetStatus, Stock};
use serde::{Deserialize, Serialize};

use super::pager::{Beside, Place};
use super::reply::{parsed, parsed_if_given};
use crate::error::ApiError;
use crate::state::PetService;

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
    /// `newest` for the newest pets first; the oldest first otherwise.
    #[serde(default)]
    pub(super) sort: String,
    #[serde(default)]
    pub(super) after: String,
    #[serde(default)]
    pub(super) before: String,
}

/// What a list's page asks the store: its filter, and where the page is.
#[derive(Debug, Clone)]
pub(super) struct Asked {
    /// The filter, in the list's order, from the start.
    filter: PetQuery,
    after: Option<PetId>,
    before: Option<PetId>,
}

impl Asked {
    /// The first page of what `filter` finds.
    pub(super) fn of(filter: PetQuery) -> Self {
        Self {
            filter: filter.page(None, PageSize::MAX_PAGE),
            after: None,
            before: None,
        }
    }

    /// The query of the page's rows: after `after` in the list's order, or the page before
    /// `before`, nearest first (the rows to turn back with [`placed`]).
    pub(super) fn rows(&self) -> PetQuery {
        match self.before {
            Some(before) => self.filter.clone().backwards_from(before),
            None => self.filter.clone().page(self.after, self.filter.limit),
        }
    }
}

/// The rows of a page of pets (`rows`, read with [`Asked::rows`]) in the list's order, and
/// where the page stands among all its filter finds (one pet count each).
pub(super) fn placed<T>(
    shop: &PetService<'_>,
    asked: &Asked,
    mut rows: Vec<T>,
    pet_of: impl Fn(&T) -> PetId,
) -> Result<(Vec<T>, Place), DomainError> {
    if asked.before.is_some() {
        rows.reverse();
    }
    let pets = shop.pets();
    let total = pets.count(&asked.filter)?;
    let first_page = asked.after.is_none() && asked.before.is_none();
    let place = Place::of_page(total, first_page, &rows, |first| {
        let after = asked
            .filter
            .clone()
            .page(Some(pet_of(first)), PageSize::MAX_PAGE);
        pets.count(&after)
    })?;
    Ok((rows, place))
}

impl ListFilter {
    /// The level at or below which a pet runs low.
    pub(super) fn low_at(&self) -> Result<u32, ApiError> {
        low_at(&self.low_at)
    }

    /// The pets the filter finds, a page of 100 from its position.
    pub(super) fn asked(&self) -> Result<Asked, ApiError> {
        let optional = |text: &str| (!text.trim().is_empty()).then(|| text.trim().to_owned());
        let status = optional(&self.status).map(|s| parsed(&s)).transpose()?;
        let category = optional(&self.category).map(|c| parsed(&c)).transpose()?;
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
        let filter = PetQuery::new(status, category, optional(&self.name), Vec::new())
            .map_err(|e| ApiError::invalid_parameter(e.to_string()))?
            .stock_at_most(at_most)
            .newest_first(self.newest_first())
            .page(None, PageSize::MAX_PAGE);
        Ok(Asked {
            filter,
            after: parsed_if_given(&self.after)?,
            before: parsed_if_given(&self.before)?,
        })
    }

    fn newest_first(&self) -> bool {
        self.sort == "newest"
    }

    /// The address of the list at `list` with this filter, from `after` or up to `before`.
    pub(super) fn at(&self, list: &str, after: Option<PetId>, before: Option<PetId>) -> String {
        let at = Self {
            after: after.map(|id| id.to_string()).unwrap_or_default(),
            before: before.map(|id| id.to_string()).unwrap_or_default(),
            ..self.clone()
        };
        format!(
            "{list}?{}",
            serde_html_form::to_string(&at).unwrap_or_default()
        )
    }

    /// The pages beside the one of rows `first` to `last` of the list at `list`.
    pub(super) fn beside(&self, list: &str, first: Option<PetId>, last: Option<PetId>) -> Beside {
        Beside {
            first: self.at(list, None, None),
            previous: self.at(list, None, first),
            next: self.at(list, last, None),
        }
    }

    /// The column heading that turns the list's order (the pets' ids: when they were added).
    pub(super) fn sorted_heading(&self, list: &str, label: &str) -> Markup {
        let (sorted, turn, sort) = if self.newest_first() {
            ("descending", "Newest first: show the oldest first", "")
        } else {
            ("ascending", "Oldest first: show the newest first", "newest")
        };
        let turned = Self {
            sort: sort.to_owned(),
            ..self.clone()
        };
        html! {
            th scope="col" aria-sort=(sorted) { a href=(turned.at(list, None, None)) title=(turn) { (label) } }
        }
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
                div {
                    label for="filter-sort" { "Order" }
                    select #filter-sort name="sort" {
                        option value="" selected[!self.newest_first()] { "Oldest first" }
                        option value="newest" selected[self.newest_first()] { "Newest first" }
                    }
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

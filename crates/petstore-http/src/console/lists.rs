//! What the pets list and the stock list share: one filter (status, category, name, and the
//! units that can be ordered: running low or out), its order (by when added or by name, either
//! way), its form, and the marks of a level.

use maud::{Markup, html};
use petstore_core::{
    Category, DomainError, PageSize, Pet, PetId, PetQuery, PetSort, PetStatus, Stock,
};
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
    /// The list's order: one of [`ORDERS`] (empty: the oldest first).
    #[serde(default)]
    pub(super) sort: String,
    #[serde(default)]
    pub(super) after: String,
    /// The name of the `after` pet, in a list by name (whose keyset it is part of).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(super) after_name: String,
    #[serde(default)]
    pub(super) before: String,
    /// The name of the `before` pet, in a list by name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(super) before_name: String,
}

/// The orders a list can be in: the `sort` a link sends, its label, its order and whether it
/// is turned around.
const ORDERS: [(&str, &str, PetSort, bool); 4] = [
    ("", "Oldest first", PetSort::Added, false),
    ("newest", "Newest first", PetSort::Added, true),
    ("name", "Name, A to Z", PetSort::Name, false),
    ("name-desc", "Name, Z to A", PetSort::Name, true),
];

/// A row a page starts after (or ends before): its pet, and the name a list by name needs.
#[derive(Debug, Clone)]
pub(super) struct Position {
    pub(super) id: PetId,
    pub(super) name: String,
}

impl Position {
    pub(super) fn new(id: PetId, name: &str) -> Self {
        Self {
            id,
            name: name.to_owned(),
        }
    }

    /// The position of `pet`'s row.
    pub(super) fn of_pet(pet: &Pet) -> Self {
        Self::new(pet.id, pet.name.as_str())
    }
}

/// What a list's page asks the store: its filter, and where the page is.
#[derive(Debug, Clone)]
pub(super) struct Asked {
    /// The filter, in the list's order, from the start.
    filter: PetQuery,
    after: Option<Position>,
    before: Option<Position>,
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
        match &self.before {
            Some(before) => self
                .filter
                .clone()
                .backwards_from(before.id)
                .after_named(Some(before.name.clone())),
            None => self.from(self.after.as_ref(), self.filter.limit),
        }
    }

    /// The filter's page of `limit` pets after `after`.
    fn from(&self, after: Option<&Position>, limit: PageSize) -> PetQuery {
        self.filter
            .clone()
            .page(after.map(|at| at.id), limit)
            .after_named(after.map(|at| at.name.clone()))
    }
}

/// The rows of a page of pets (`rows`, read with [`Asked::rows`]) in the list's order, and
/// where the page stands among all its filter finds (one pet count each).
pub(super) fn placed<T>(
    shop: &PetService<'_>,
    asked: &Asked,
    mut rows: Vec<T>,
    pet_of: impl Fn(&T) -> Position,
) -> Result<(Vec<T>, Place), DomainError> {
    if asked.before.is_some() {
        rows.reverse();
    }
    let pets = shop.pets();
    let total = pets.count(&asked.filter)?;
    let first_page = asked.after.is_none() && asked.before.is_none();
    let place = Place::of_page(total, first_page, &rows, |first| {
        pets.count(&asked.from(Some(&pet_of(first)), PageSize::MAX_PAGE))
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
        let (_, _, sort, turned) = self.order()?;
        let filter = PetQuery::new(status, category, optional(&self.name), Vec::new())
            .map_err(|e| ApiError::invalid_parameter(e.to_string()))?
            .stock_at_most(at_most)
            .sorted(sort)
            .newest_first(turned)
            .page(None, PageSize::MAX_PAGE);
        let position = |id: &str, name: &str| -> Result<Option<Position>, ApiError> {
            let id: Option<PetId> = parsed_if_given(id)?;
            Ok(id.map(|id| Position::new(id, name)))
        };
        Ok(Asked {
            filter,
            after: position(&self.after, &self.after_name)?,
            before: position(&self.before, &self.before_name)?,
        })
    }

    /// The list's order, as [`ORDERS`] has it.
    fn order(&self) -> Result<(&'static str, &'static str, PetSort, bool), ApiError> {
        ORDERS
            .into_iter()
            .find(|(sort, ..)| *sort == self.sort)
            .ok_or_else(|| {
                ApiError::invalid_parameter("sort: must be newest, name, name-desc or empty")
            })
    }

    fn by_name(&self) -> bool {
        self.order()
            .is_ok_and(|(_, _, sort, _)| sort == PetSort::Name)
    }

    /// The address of the list at `list` with this filter, from `after` or up to `before`.
    pub(super) fn at(
        &self,
        list: &str,
        after: Option<&Position>,
        before: Option<&Position>,
    ) -> String {
        // Only a list by name starts from a name: the others keep their addresses short.
        let name = |at: Option<&Position>| match at {
            Some(at) if self.by_name() => at.name.clone(),
            _ => String::new(),
        };
        let at = Self {
            after: after.map(|at| at.id.to_string()).unwrap_or_default(),
            after_name: name(after),
            before: before.map(|at| at.id.to_string()).unwrap_or_default(),
            before_name: name(before),
            ..self.clone()
        };
        format!(
            "{list}?{}",
            serde_html_form::to_string(&at).unwrap_or_default()
        )
    }

    /// The pages beside the one of rows `first` to `last` of the list at `list`.
    pub(super) fn beside(
        &self,
        list: &str,
        first: Option<Position>,
        last: Option<Position>,
    ) -> Beside {
        Beside {
            first: self.at(list, None, None),
            previous: self.at(list, None, first.as_ref()),
            next: self.at(list, last.as_ref(), None),
        }
    }

    /// The heading of a column the list can be sorted by (`by`): a link that sorts by it, or,
    /// when the list is sorted by it, turns the order around.
    pub(super) fn sorted_heading(&self, list: &str, label: &str, by: PetSort) -> Markup {
        let current = self.order().ok();
        let sorted = current.filter(|(_, _, sort, _)| *sort == by);
        let turned = sorted.is_some_and(|(_, _, _, turned)| !turned);
        let aria = sorted.map(|(.., turned)| if turned { "descending" } else { "ascending" });
        let (sort, next, ..) = ORDERS
            .into_iter()
            .find(|(_, _, sort, turn)| *sort == by && *turn == turned)
            .unwrap_or(ORDERS[0]);
        let title = match current {
            Some((_, now, ..)) if sorted.is_some() => {
                format!("{now}: show {}", next.to_lowercase())
            }
            _ => format!("Sort: {}", next.to_lowercase()),
        };
        let target = Self {
            sort: sort.to_owned(),
            ..self.clone()
        };
        html! {
            th scope="col" aria-sort=[aria] { a href=(target.at(list, None, None)) title=(title) { (label) } }
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
                        @for (value, label, ..) in ORDERS {
                            option value=(value) selected[self.sort == value] { (label) }
                        }
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

//! Queries of pets and of their stock entries: filters, order and position.

use super::fold_case;
use crate::ids::{CategoryId, PetId};
use crate::model::PetStatus;
use crate::validation::ValidationError;
use crate::values::{Name, PageSize, Stock};

/// The order of a list of pets; [`PetQuery::newest_first`] turns it around.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PetSort {
    /// By id: by when the pets were added.
    #[default]
    Added,
    /// By name folded with [`fold_case`], compared byte by byte (so every store and every
    /// database locale agrees), and pets of one name by id.
    Name,
}

/// Filters and position for listing pets. Filters combine with AND.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PetQuery {
    /// Only pets with this status.
    pub status: Option<PetStatus>,
    /// Only pets in this category.
    pub category_id: Option<CategoryId>,
    /// Only pets whose name contains this text, compared case-insensitively
    /// (see [`fold_case`]).
    pub name_contains: Option<String>,
    /// Only these pets; empty means no restriction.
    pub ids: Vec<PetId>,
    /// Only pets with at most this many units that can be ordered: running low, or (with
    /// [`Stock::ZERO`]) out of stock.
    pub stock_at_most: Option<Stock>,
    /// The list's order.
    pub sort: PetSort,
    /// The order turned around: newest first (by id descending, `after` then meaning a
    /// smaller id), or names from Z to A.
    pub newest_first: bool,
    /// Only pets after this one in the list's order: with a larger id, or a smaller one when
    /// [`newest_first`](Self::newest_first).
    pub after: Option<PetId>,
    /// The name of the [`after`](Self::after) pet, which a list by [`PetSort::Name`] starts
    /// after together with its id (a missing one counts as the empty name). Carried rather
    /// than read, so that a page starts in its place even when that pet is gone.
    pub after_name: Option<String>,
    /// Page size.
    pub limit: PageSize,
}

impl PetQuery {
    /// The most ids one query may name.
    pub const MAX_IDS: usize = 100;

    /// The first page of the pets matching these filters, if the filters are within bounds:
    /// at most [`MAX_IDS`](Self::MAX_IDS) ids, and a name search no longer than a name can be.
    pub fn new(
        status: Option<PetStatus>,
        category_id: Option<CategoryId>,
        name_contains: Option<String>,
        ids: Vec<PetId>,
    ) -> Result<Self, ValidationError> {
        if ids.len() > Self::MAX_IDS {
            return Err(ValidationError::new("id", "at most 100 ids at once"));
        }
        if name_contains
            .as_ref()
            .is_some_and(|name| name.chars().count() > Name::MAX_CHARS)
        {
            return Err(ValidationError::new("name", "at most 100 characters"));
        }
        // No name holds one, so the search could match nothing; and PostgreSQL cannot hold a
        // NUL at all, so refusing it here keeps both backends' answers the same.
        if name_contains
            .as_ref()
            .is_some_and(|name| name.chars().any(char::is_control))
        {
            return Err(ValidationError::new(
                "name",
                "must not contain control characters",
            ));
        }
        Ok(Self {
            status,
            category_id,
            name_contains,
            ids,
            stock_at_most: None,
            sort: PetSort::Added,
            newest_first: false,
            after: None,
            after_name: None,
            limit: PageSize::default(),
        })
    }

    /// The same query, in the order `sort`.
    #[must_use]
    pub fn sorted(self, sort: PetSort) -> Self {
        Self { sort, ..self }
    }

    /// The same query, from after the pet named `name` (a list by [`PetSort::Name`] needs
    /// it; see [`after_name`](Self::after_name)).
    #[must_use]
    pub fn after_named(self, name: Option<String>) -> Self {
        Self {
            after_name: name,
            ..self
        }
    }

    /// Whether the pet `id` named `name` comes after the query's position, in its order.
    pub fn is_past(&self, id: PetId, name: &str) -> bool {
        let Some(after) = self.after else {
            return true;
        };
        let order = match self.sort {
            PetSort::Added => id.cmp(&after),
            PetSort::Name => {
                let after_key = fold_case(self.after_name.as_deref().unwrap_or_default());
                (fold_case(name), id).cmp(&(after_key, after))
            }
        };
        order
            == if self.newest_first {
                std::cmp::Ordering::Less
            } else {
                std::cmp::Ordering::Greater
            }
    }

    /// The same query, of the pets with at most `stock` units that can be ordered (none:
    /// every pet).
    #[must_use]
    pub fn stock_at_most(self, stock: Option<Stock>) -> Self {
        Self {
            stock_at_most: stock,
            ..self
        }
    }

    /// The same query, newest first (`true`) or oldest first.
    #[must_use]
    pub fn newest_first(self, newest_first: bool) -> Self {
        Self {
            newest_first,
            ..self
        }
    }

    /// The same filters in the other direction, from `after`: the pets before a page,
    /// nearest first (by name: from the pet [`after_named`](Self::after_named)).
    #[must_use]
    pub fn backwards_from(self, after: PetId) -> Self {
        Self {
            newest_first: !self.newest_first,
            after: Some(after),
            ..self
        }
    }

    /// The same query, for the page of `limit` pets after `after`.
    #[must_use]
    pub fn page(self, after: Option<PetId>, limit: PageSize) -> Self {
        Self {
            after,
            limit,
            ..self
        }
    }
}

/// Filters and position for listing inventory entries: the entries of the pets a
/// [`PetQuery`] of the same filters finds, in the same order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InventoryQuery {
    /// Only entries of pets with this status.
    pub status: Option<PetStatus>,
    /// Only entries of pets in this category.
    pub category_id: Option<CategoryId>,
    /// Only entries of pets whose name contains this text, as [`PetQuery::name_contains`].
    pub name_contains: Option<String>,
    /// Only entries with at most this many units that can be ordered.
    pub stock_at_most: Option<Stock>,
    /// The order of their pets, as [`PetQuery::sort`].
    pub sort: PetSort,
    /// The order turned around, as [`PetQuery::newest_first`].
    pub newest_first: bool,
    /// Only entries of pets after this one in the list's order, as [`PetQuery::after`].
    pub after: Option<PetId>,
    /// The name of the `after` pet, as [`PetQuery::after_name`].
    pub after_name: Option<String>,
    /// Page size.
    pub limit: PageSize,
}

impl InventoryQuery {
    /// The entries of the pets `pets` finds (their ids aside: an entry list names none).
    pub fn of_pets(pets: &PetQuery) -> Self {
        Self {
            status: pets.status,
            category_id: pets.category_id,
            name_contains: pets.name_contains.clone(),
            stock_at_most: pets.stock_at_most,
            sort: pets.sort,
            newest_first: pets.newest_first,
            after: pets.after,
            after_name: pets.after_name.clone(),
            limit: pets.limit,
        }
    }

    /// The query of the pets whose entries this lists.
    pub fn pets(&self) -> PetQuery {
        PetQuery {
            status: self.status,
            category_id: self.category_id,
            name_contains: self.name_contains.clone(),
            ids: Vec::new(),
            stock_at_most: self.stock_at_most,
            sort: self.sort,
            newest_first: self.newest_first,
            after: self.after,
            after_name: self.after_name.clone(),
            limit: self.limit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pet_filters_are_bounded() {
        let ids = |n: i64| {
            (1..=n)
                .map(|id| PetId::new(id).unwrap())
                .collect::<Vec<_>>()
        };
        assert!(PetQuery::new(None, None, None, ids(100)).is_ok());
        let too_many = PetQuery::new(None, None, None, ids(101)).unwrap_err();
        assert_eq!(too_many.field, "id");
        assert!(PetQuery::new(None, None, Some("é".repeat(100)), Vec::new()).is_ok());
        let too_long = PetQuery::new(None, None, Some("é".repeat(101)), Vec::new()).unwrap_err();
        assert_eq!(too_long.field, "name");
        for control in ["\0", "a\u{1}b", "\u{7f}", "\u{85}"] {
            let refused = PetQuery::new(None, None, Some(control.into()), Vec::new()).unwrap_err();
            assert_eq!(refused.field, "name", "{control:?}");
        }
    }

    #[test]
    fn a_position_by_name_is_the_folded_name_then_the_id() {
        let pet = |id: i64| PetId::new(id).unwrap();
        let after_rex = PetQuery::default()
            .sorted(PetSort::Name)
            .page(Some(pet(5)), PageSize::default())
            .after_named(Some("Rex".into()));
        assert!(after_rex.is_past(pet(1), "Tom"));
        assert!(
            after_rex.is_past(pet(6), "rex"),
            "the same name, a larger id"
        );
        assert!(
            !after_rex.is_past(pet(4), "REX"),
            "the same name, a smaller id"
        );
        assert!(!after_rex.is_past(pet(5), "Rex"), "the pet itself");
        assert!(!after_rex.is_past(pet(9), "Bella"));
        let z_to_a = after_rex.newest_first(true);
        assert!(z_to_a.is_past(pet(9), "Bella"));
        assert!(z_to_a.is_past(pet(4), "rex"));
        assert!(!z_to_a.is_past(pet(1), "Tom"));
        let by_id = PetQuery::default().page(Some(pet(5)), PageSize::default());
        assert!(by_id.is_past(pet(6), "Aaron") && !by_id.is_past(pet(4), "Zed"));
    }
}

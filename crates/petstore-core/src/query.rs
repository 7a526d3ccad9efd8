//! List queries and pages.
//!
//! Lists are ordered by id and paginated by keyset: a query says "items after id N", so the
//! thousandth page costs what the first does. A store returns up to `limit + 1` items; the
//! extra one only tells [`Page`] whether another page follows.

use crate::ids::{CategoryId, OwnerId, PetId};
use crate::model::PetStatus;
use crate::validation::ValidationError;
use crate::values::{Name, PageSize, Stock};

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
    /// Newest first: by id descending, `after` then meaning a smaller id.
    pub newest_first: bool,
    /// Only pets after this one in the list's order: with a larger id, or a smaller one when
    /// [`newest_first`](Self::newest_first).
    pub after: Option<PetId>,
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
            newest_first: false,
            after: None,
            limit: PageSize::default(),
        })
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
    /// nearest first.
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

/// Position for listing categories.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CategoryQuery {
    /// Only categories with a larger id.
    pub after: Option<CategoryId>,
    /// Page size.
    pub limit: PageSize,
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
    /// Newest pets first, as [`PetQuery::newest_first`].
    pub newest_first: bool,
    /// Only entries of pets after this one in the list's order, as [`PetQuery::after`].
    pub after: Option<PetId>,
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
            newest_first: pets.newest_first,
            after: pets.after,
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
            newest_first: self.newest_first,
            after: self.after,
            limit: self.limit,
        }
    }
}

/// Filters and position for listing orders.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OrderQuery {
    /// Only orders for this pet.
    pub pet_id: Option<PetId>,
    /// Only complete (`true`) or open (`false`) orders.
    pub complete: Option<bool>,
    /// Newest first: by id descending, `after` then meaning a smaller id.
    pub newest_first: bool,
    /// Only orders after this one in the list's order: with a larger id, or a smaller one
    /// when [`newest_first`](Self::newest_first).
    pub after: Option<crate::ids::OrderId>,
    /// Page size.
    pub limit: PageSize,
    /// Only orders placed by this owner. Set by the service from an [`OrderScope`]; a value
    /// given by the caller is replaced.
    pub owner: Option<OwnerId>,
}

impl OrderQuery {
    /// The same filters in the other direction, from `after`: the orders before a page,
    /// nearest first.
    #[must_use]
    pub fn backwards_from(self, after: crate::ids::OrderId) -> Self {
        Self {
            newest_first: !self.newest_first,
            after: Some(after),
            ..self
        }
    }
}

/// Position for listing API keys.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyQuery {
    /// Only keys with a larger id.
    pub after: Option<crate::ids::KeyId>,
    /// Page size.
    pub limit: PageSize,
}

/// Which orders a caller may see. A caller asking for an order outside its scope is told
/// it does not exist, so order ids of other customers leak nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderScope {
    /// Every order (staff).
    All,
    /// Only the orders this owner placed (a customer).
    OwnedBy(OwnerId),
}

impl OrderScope {
    /// Whether an order placed by `owner` is visible in this scope.
    pub fn allows(self, owner: Option<OwnerId>) -> bool {
        match self {
            OrderScope::All => true,
            OrderScope::OwnedBy(me) => owner == Some(me),
        }
    }
}

/// One page of a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    /// The items, by id ascending.
    pub items: Vec<T>,
    /// When more items follow: the id to pass as `after` for the next page.
    pub next_after: Option<i64>,
}

impl<T> Page<T> {
    /// Cuts what a store returned (up to `limit + 1` items) into a page.
    pub fn from_probe(mut items: Vec<T>, limit: PageSize, id_of: impl Fn(&T) -> i64) -> Self {
        let limit = limit.get() as usize;
        let next_after = if items.len() > limit {
            items.truncate(limit);
            items.last().map(id_of)
        } else {
            None
        };
        Page { items, next_after }
    }
}

/// Folds text for case-insensitive comparison (category names, name searches). Every store
/// must compare with this function's result so that all stores agree, beyond ASCII too.
pub fn fold_case(text: &str) -> String {
    text.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_longer_than_the_page_gives_a_next_position() {
        let limit = PageSize::new(2).unwrap();
        let page = Page::from_probe(vec![1, 2, 3], limit, |n| *n);
        assert_eq!(page.items, vec![1, 2]);
        assert_eq!(page.next_after, Some(2));
        let last = Page::from_probe(vec![3, 4], limit, |n| *n);
        assert_eq!(last.next_after, None);
    }

    #[test]
    fn an_owner_sees_only_its_own_orders() {
        let me = OwnerId::new(1).unwrap();
        let other = OwnerId::new(2).unwrap();
        assert!(OrderScope::OwnedBy(me).allows(Some(me)));
        assert!(!OrderScope::OwnedBy(me).allows(Some(other)));
        assert!(!OrderScope::OwnedBy(me).allows(None));
        assert!(OrderScope::All.allows(None));
    }

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
    fn folding_is_unicode_aware() {
        assert_eq!(fold_case("ÉCLAIR Dog"), fold_case("éclair dog"));
    }
}

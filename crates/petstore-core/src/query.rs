//! List queries and pages.
//!
//! Lists are ordered by id (pets may be ordered by name too, [`PetSort`]) and paginated by
//! keyset: a query says "items after id N", so the thousandth page costs what the first does.
//! A store returns up to `limit + 1` items; the extra one only tells [`Page`] whether another
//! page follows.

mod pets;

pub use pets::{InventoryQuery, PetQuery, PetSort};

use crate::ids::{CategoryId, OwnerId, PetId};
use crate::values::PageSize;

/// Position for listing categories.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CategoryQuery {
    /// Only categories with a larger id.
    pub after: Option<CategoryId>,
    /// Page size.
    pub limit: PageSize,
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
    fn folding_is_unicode_aware() {
        assert_eq!(fold_case("ÉCLAIR Dog"), fold_case("éclair dog"));
    }
}

//! Where a list's page stands among everything its filter finds: "101–171 of 171", with
//! the previous and next pages a link away.

use maud::{Markup, html};

/// A page's place among a list's matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Place {
    /// The position of the page's first row (1-based; 0 when it shows none).
    first: u64,
    /// How many rows it shows.
    shown: u64,
    /// How many rows the filter finds in all.
    total: u64,
}

impl Place {
    /// The place of a page of `shown` rows, given how many rows the filter finds in all and
    /// how many come after the page's first row.
    pub(super) fn of(total: u64, after_first: u64, shown: usize) -> Self {
        let shown = shown as u64;
        let first = if shown == 0 {
            0
        } else {
            total.saturating_sub(after_first)
        };
        Self {
            first,
            shown,
            total,
        }
    }

    /// The place of a page's `rows` (in the list's order) among the `total` its filter finds:
    /// a first page starts at the first row; another asks `after_first` how many rows follow
    /// its first.
    pub(super) fn of_page<T, E>(
        total: u64,
        first_page: bool,
        rows: &[T],
        after_first: impl FnOnce(&T) -> Result<u64, E>,
    ) -> Result<Self, E> {
        let after_first = match rows.first() {
            // Nothing to count before the first row.
            Some(_) if first_page => total.saturating_sub(1),
            Some(first) => after_first(first)?,
            None => 0,
        };
        Ok(Self::of(total, after_first, rows.len()))
    }

    /// Whether rows come before the page.
    pub(super) fn has_previous(self) -> bool {
        self.first > 1
    }

    /// Whether rows come after the page.
    pub(super) fn has_next(self) -> bool {
        self.shown > 0 && self.last() < self.total
    }

    fn last(self) -> u64 {
        (self.first + self.shown).saturating_sub(1)
    }

    /// "101–171 of 171", or "None of 171" for a page past the end.
    pub(super) fn said(self) -> String {
        match self.shown {
            0 => format!("None of {}", self.total),
            _ => format!("{}–{} of {}", self.first, self.last(), self.total),
        }
    }
}

/// The addresses of the pages beside one: each used where such a page exists.
pub(super) struct Beside {
    /// The first page (for a page past the end, as an old link may lead to).
    pub(super) first: String,
    /// The page before.
    pub(super) previous: String,
    /// The page after.
    pub(super) next: String,
}

/// The line under a list: where the page stands, and links to the pages beside it.
pub(super) fn pager(place: Place, beside: &Beside) -> Markup {
    html! {
        nav.pager aria-label="Pages" {
            span { (place.said()) }
            @if place.has_previous() { a rel="prev" href=(beside.previous) { "Previous page" } }
            @if place.shown == 0 && place.total > 0 { a href=(beside.first) { "First page" } }
            @if place.has_next() { a rel="next" href=(beside.next) { "Next page" } }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Place;

    #[test]
    fn a_page_says_where_it_stands_and_what_is_beside_it() {
        let last = Place::of(171, 70, 71);
        assert_eq!(last.said(), "101–171 of 171");
        assert!(last.has_previous());
        assert!(!last.has_next());

        let first = Place::of(171, 170, 100);
        assert_eq!(first.said(), "1–100 of 171");
        assert!(!first.has_previous());
        assert!(first.has_next());

        let only = Place::of(3, 2, 3);
        assert_eq!(only.said(), "1–3 of 3");
        assert!(!only.has_previous() && !only.has_next());

        let none = Place::of(0, 0, 0);
        assert_eq!(none.said(), "None of 0");
        assert!(!none.has_previous() && !none.has_next());
    }
}

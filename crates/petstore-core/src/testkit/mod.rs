//! The conformance kit: what every [`Store`](crate::Store) must do, as runnable tests.
//!
//! A store crate runs the whole kit with one macro call in its tests, giving it a function
//! that makes a fresh, empty store for each test:
//!
//! ```text
//! petstore_core::conformance_suite!(fresh_store, property_cases = 64);
//! ```
//!
//! - [`scenarios`]: one test per rule of the contract, each failing if its rule is broken;
//! - [`sequences`]: property tests over random sequences of operations, checking the
//!   contract's invariants after every step;
//! - [`scenarios::racing_orders_never_oversell`]: 32 threads racing for 10 units.
//!
//! This module is test code: it panics, with a message saying what broke, on any failure.

pub mod scenarios;
pub mod sequences;

use std::fmt::Debug;

/// `unwrap` with a message naming the step that failed, for test code.
pub trait Must<T> {
    /// The value, or a panic naming `step` and the error.
    fn must(self, step: &str) -> T;
}

impl<T, E: Debug> Must<T> for Result<T, E> {
    #[track_caller]
    fn must(self, step: &str) -> T {
        match self {
            Ok(value) => value,
            Err(error) => panic!("{step} failed: {error:?}"),
        }
    }
}

impl<T> Must<T> for Option<T> {
    #[track_caller]
    fn must(self, step: &str) -> T {
        match self {
            Some(value) => value,
            None => panic!("{step}: found nothing"),
        }
    }
}

/// Every item of a keyset-paginated list, walking its pages: `fetch` gets the position to start
/// after (an id of type `Id`) and returns one page. Also returns how many pages it took.
pub fn all_pages<T, Id: TryFrom<i64, Error = crate::ValidationError>>(
    mut fetch: impl FnMut(Option<Id>) -> crate::Page<T>,
) -> (Vec<T>, usize) {
    let mut items = Vec::new();
    let mut after = None;
    let mut pages = 0;
    loop {
        let page = fetch(after);
        pages += 1;
        items.extend(page.items);
        match page.next_after {
            Some(next) => after = Some(Id::try_from(next).must("a valid position")),
            None => return (items, pages),
        }
    }
}

/// Defines one `#[test]` per conformance scenario, plus the property and race tests, for the
/// store made by `$make` (a function or closure taking nothing and returning a fresh store).
///
/// `property_cases` sets how many random sequences the property test runs (a store on disk
/// may want fewer than the in-memory one).
#[macro_export]
macro_rules! conformance_suite {
    ($make:expr, property_cases = $cases:expr) => {
        $crate::conformance_suite!(@scenarios $make;
            category_names_are_unique_regardless_of_case,
            a_category_with_pets_cannot_be_deleted,
            pets_need_an_existing_category,
            a_new_pet_has_an_inventory_entry_at_zero,
            replacing_and_deleting_missing_resources_is_not_found,
            an_order_takes_its_units_at_once_and_the_last_unit_makes_the_pet_pending,
            an_order_for_an_unknown_pet_is_refused,
            an_order_needs_an_available_pet,
            an_order_needs_enough_stock_and_a_refusal_changes_nothing,
            completing_the_last_open_order_without_stock_sells_the_pet,
            completion_is_final,
            cancelling_puts_units_back_and_makes_the_pet_available,
            stock_updates_drive_the_status,
            staff_may_set_any_status_and_it_is_recorded,
            a_pet_with_open_orders_cannot_be_deleted,
            customers_see_only_their_own_orders,
            lists_page_by_id_with_filters,
            every_change_records_its_events_in_order,
            ship_dates_can_be_set_and_cleared,
            racing_orders_never_oversell,
            keys_authenticate_until_revoked,
            admin_keys_are_bootstrapped_once,
            conditional_changes_apply_only_to_the_state_they_expect,
            racing_conditional_replacements_let_exactly_one_win,
            idempotent_creates_replay_and_change_nothing,
            concurrent_retries_place_one_order,
            webhooks_deliver_matching_events_in_order_and_retry_failures,
            webhooks_skip_other_events_and_can_be_deleted,
            old_delivery_attempts_are_pruned,
        );

        #[test]
        fn random_operation_sequences_keep_every_invariant() {
            $crate::testkit::sequences::check($make, $cases);
        }
    };
    (@scenarios $make:expr; $($scenario:ident),* $(,)?) => {
        $(
            #[test]
            fn $scenario() {
                $crate::testkit::scenarios::$scenario(($make)());
            }
        )*
    };
}

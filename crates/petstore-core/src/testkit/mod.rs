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
//!   [`SCENARIOS`] names them all;
//! - [`sequences`]: property tests over random sequences of operations, checking the
//!   contract's invariants after every step;
//! - [`scenarios::racing_orders_never_oversell`]: 32 threads racing for 10 units.
//!
//! This module is test code: it panics, with a message saying what broke, on any failure.

pub mod scenarios;
pub mod sequences;

use std::fmt::Debug;

use crate::Outcome;

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

/// [`Must`] for creates: what a create made now, for test code.
pub trait Made<T> {
    /// The value made now, or a panic naming `step` if the create failed or was a replay.
    fn made(self, step: &str) -> T;
}

impl<T, E: Debug> Made<T> for Result<Outcome<T>, E> {
    #[track_caller]
    fn made(self, step: &str) -> T {
        match self.must(step) {
            Outcome::Done(value) => value,
            Outcome::Replayed(_) => panic!("{step}: replayed a recorded answer instead of running"),
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

/// The name of every conformance scenario, each a function in [`scenarios`] that
/// [`conformance_suite!`](crate::conformance_suite) runs as a test. Made from the same list
/// the macro expands, so the two cannot differ.
pub const SCENARIOS: &[&str] = crate::__conformance_scenarios!(names);

/// Defines one `#[test]` per conformance scenario ([`SCENARIOS`]), plus the property and race
/// tests, for the store made by `$make` (a function or closure taking nothing and returning a
/// fresh store).
///
/// `property_cases` sets how many random sequences the property test runs (a store on disk
/// may want fewer than the in-memory one). A store that needs a server may add
/// `run_if = $guard`: each test returns at once, as passed, when `$guard()` is false (the
/// crate then says so another way: these tests cannot).
#[macro_export]
macro_rules! conformance_suite {
    ($make:expr, property_cases = $cases:expr) => {
        $crate::conformance_suite!($make, property_cases = $cases, run_if = || true);
    };
    ($make:expr, property_cases = $cases:expr, run_if = $guard:expr) => {
        $crate::__conformance_scenarios!(tests $make, $guard);

        #[test]
        fn random_operation_sequences_keep_every_invariant() {
            if !($guard)() {
                return;
            }
            $crate::testkit::sequences::check($make, $cases);
        }
    };
}

/// The list of conformance scenarios: the only place they are named. Hands them to
/// [`__conformance_expand!`](crate::__conformance_expand) with `tests $make, $guard` (one `#[test]`
/// each, for [`conformance_suite!`](crate::conformance_suite)) or `names` (a `&[&str]`, for
/// [`SCENARIOS`]).
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_scenarios {
    ($($how:tt)*) => {
        $crate::__conformance_expand! { ($($how)*)
            // catalogue
            category_names_are_unique_regardless_of_case,
            a_category_with_pets_cannot_be_deleted,
            pets_need_an_existing_category,
            a_new_pet_has_an_inventory_entry_at_zero,
            replacing_and_deleting_missing_resources_is_not_found,
            a_pet_with_open_orders_cannot_be_deleted,
            lists_page_by_id_with_filters,
            conditional_changes_apply_only_to_the_state_they_expect,
            racing_conditional_replacements_let_exactly_one_win,
            // prices
            a_price_is_set_read_and_removed_in_the_shops_currency,
            a_pet_keeps_its_price_when_replaced_or_its_status_moves,
            price_changes_apply_only_to_the_price_they_expect,
            an_order_keeps_the_price_its_pet_had_when_placed,
            // checkouts
            a_checkout_places_every_line_at_its_price_in_one_order,
            a_refused_checkout_names_every_line_and_changes_nothing,
            completing_and_cancelling_a_checkout_act_on_every_line,
            a_checkout_is_placed_once_per_idempotency_key,
            // holds
            a_hold_sets_units_aside_until_it_is_released,
            a_refused_hold_names_its_lines_and_holds_nothing,
            a_checked_out_hold_becomes_one_order,
            a_hold_past_its_expiry_is_ended_by_the_sweeper_once,
            staff_see_the_holds_about_to_expire,
            customers_see_only_their_own_holds,
            a_hold_is_placed_once_per_idempotency_key,
            racing_sweepers_end_each_hold_once,
            // the stock ledger
            every_change_of_stock_is_a_movement_of_its_kind,
            a_refused_or_empty_change_makes_no_movement,
            a_delivery_is_received_whole_or_not_at_all,
            // inventory: the stock rules
            an_order_takes_its_units_at_once_and_the_last_unit_makes_the_pet_pending,
            an_order_needs_an_available_pet,
            an_order_needs_enough_stock_and_a_refusal_changes_nothing,
            completing_the_last_open_order_without_stock_sells_the_pet,
            cancelling_puts_units_back_and_makes_the_pet_available,
            stock_updates_drive_the_status,
            the_stock_list_filters_as_the_pets_list_does,
            pets_and_stock_list_newest_first_and_are_counted,
            pets_and_stock_list_by_name_both_ways,
            staff_may_set_any_status_and_it_is_recorded,
            racing_orders_never_oversell,
            // orders
            an_order_for_an_unknown_pet_is_refused,
            completion_is_final,
            customers_see_only_their_own_orders,
            ship_dates_can_be_set_and_cleared,
            orders_list_newest_first_and_are_counted,
            // access
            callers_may_do_only_what_their_role_grants,
            // keys
            keys_authenticate_until_revoked,
            admin_keys_are_bootstrapped_once,
            revocations_are_counted,
            // staff sessions
            staff_and_admins_open_sessions_customers_do_not,
            sessions_end_when_idle_when_old_and_when_their_key_is_revoked,
            // events
            every_change_records_its_events_in_order,
            events_keep_the_trace_of_the_request_that_caused_them,
            events_record_who_caused_them,
            // idempotency
            idempotent_creates_replay_and_change_nothing,
            concurrent_retries_place_one_order,
            // webhooks
            webhooks_deliver_matching_events_in_order_and_retry_failures,
            webhooks_skip_other_events_and_can_be_deleted,
            old_delivery_attempts_are_pruned,
            one_sender_holds_a_subscription_at_a_time,
            a_run_records_its_progress_in_batches,
            a_run_cut_short_is_resumed_from_its_last_record,
            an_admin_has_events_sent_again_from_an_event_id,
        }
    };
}

/// Expands the list of [`__conformance_scenarios!`](crate::__conformance_scenarios).
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_expand {
    ((tests $make:expr, $guard:expr) $($scenario:ident),* $(,)?) => {
        $(
            #[test]
            fn $scenario() {
                if !($guard)() {
                    return;
                }
                $crate::testkit::scenarios::$scenario(($make)());
            }
        )*
    };
    ((names) $($scenario:ident),* $(,)?) => {
        &[$(stringify!($scenario)),*]
    };
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::SCENARIOS;

    /// Every file of `scenarios/`, by name, with its source. `mod.rs` holds the fixture and
    /// helpers; every other file holds only scenarios as its public functions.
    const SOURCES: &[(&str, &str)] = &[
        ("mod.rs", include_str!("scenarios/mod.rs")),
        ("access.rs", include_str!("scenarios/access.rs")),
        ("catalogue.rs", include_str!("scenarios/catalogue.rs")),
        ("checkout.rs", include_str!("scenarios/checkout.rs")),
        ("deliveries.rs", include_str!("scenarios/deliveries.rs")),
        ("events.rs", include_str!("scenarios/events.rs")),
        ("holds.rs", include_str!("scenarios/holds.rs")),
        ("idempotency.rs", include_str!("scenarios/idempotency.rs")),
        ("inventory.rs", include_str!("scenarios/inventory.rs")),
        ("keys.rs", include_str!("scenarios/keys.rs")),
        ("ledger.rs", include_str!("scenarios/ledger.rs")),
        ("lists.rs", include_str!("scenarios/lists.rs")),
        ("orders.rs", include_str!("scenarios/orders.rs")),
        ("prices.rs", include_str!("scenarios/prices.rs")),
        ("sessions.rs", include_str!("scenarios/sessions.rs")),
        ("webhooks.rs", include_str!("scenarios/webhooks.rs")),
    ];

    /// The public functions of `source`, each with whether it is declared as a scenario:
    /// `pub fn NAME<X: Store…`.
    fn public_fns(source: &str) -> Vec<(&str, bool)> {
        let mut found = Vec::new();
        for (start, _) in source.match_indices("pub fn ") {
            let rest = &source[start + "pub fn ".len()..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let (name, after) = rest.split_at(end);
            let takes_a_store = after.strip_prefix('<').is_some_and(|generics| {
                generics.split_once(':').is_some_and(|(param, bound)| {
                    param
                        .trim()
                        .chars()
                        .all(|c| c.is_alphanumeric() || c == '_')
                        && bound.trim_start().starts_with("Store")
                })
            });
            found.push((name, takes_a_store));
        }
        found
    }

    /// The scenarios the sources define: every `pub fn NAME<S: Store…` anywhere, and every
    /// public function of a file other than `mod.rs` (however it takes its store).
    fn defined_scenarios() -> BTreeSet<&'static str> {
        let mut defined = BTreeSet::new();
        for (file, source) in SOURCES {
            for (name, takes_a_store) in public_fns(source) {
                if takes_a_store || *file != "mod.rs" {
                    assert!(defined.insert(name), "{name} is defined twice ({file})");
                }
            }
        }
        defined
    }

    #[test]
    fn every_file_of_the_scenarios_is_scanned() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/testkit/scenarios");
        let on_disk: BTreeSet<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .filter(|file| file.ends_with(".rs"))
            .collect();
        let scanned: BTreeSet<String> = SOURCES.iter().map(|(f, _)| (*f).to_owned()).collect();
        assert_eq!(on_disk, scanned, "add new scenario files to SOURCES");
    }

    #[test]
    fn every_scenario_is_listed_and_every_listed_scenario_exists() {
        let defined = defined_scenarios();
        let listed: BTreeSet<&str> = SCENARIOS.iter().copied().collect();
        assert_eq!(listed.len(), SCENARIOS.len(), "a scenario is listed twice");
        let unlisted: Vec<_> = defined.difference(&listed).collect();
        assert!(
            unlisted.is_empty(),
            "defined but missing from __conformance_scenarios!, so never run: {unlisted:?}"
        );
        let undefined: Vec<_> = listed.difference(&defined).collect();
        assert!(
            undefined.is_empty(),
            "listed but not defined as `pub fn NAME<S: Store…`: {undefined:?}"
        );
    }

    #[test]
    fn the_scan_finds_scenarios_and_only_them() {
        let source = "pub fn a<S: Store>(store: S) {}\n\
                      pub fn long_one<S: Store + Sync>(\n    store: S,\n) {}\n\
                      pub fn b<T:Store>(store: T) {}\n\
                      pub fn helper(text: &str) {}\n\
                      pub fn new(store: S) -> Self {}\n\
                      fn private<S: Store>(store: S) {}\n\
                      pub fn all_pages<T, Id: TryFrom<i64>>() {}\n";
        let scenarios: Vec<_> = public_fns(source)
            .into_iter()
            .filter_map(|(name, takes_a_store)| takes_a_store.then_some(name))
            .collect();
        assert_eq!(scenarios, vec!["a", "long_one", "b"]);
    }
}

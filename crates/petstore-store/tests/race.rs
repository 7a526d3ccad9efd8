//! Many orders racing for the last units of a pet never oversell, on a real database file.

mod common;

use petstore_core::testkit::scenarios::racing_orders_never_oversell;

/// 32 threads race for 10 units; repeated on fresh databases, because a race that is lost
/// only sometimes is the kind of bug one run does not show.
#[test]
fn thirty_two_racers_for_ten_units_repeatedly() {
    for _ in 0..25 {
        racing_orders_never_oversell(common::TempStore::new());
    }
}

/// The same on PostgreSQL, where 32 connections really write at once: the pet's row lock is
/// what keeps them from both selling the last unit.
#[test]
fn thirty_two_racers_for_ten_units_repeatedly_on_postgres() {
    if !petstore_store::testing::postgres_configured() {
        return;
    }
    for _ in 0..10 {
        racing_orders_never_oversell(common::TempPgStore::with(|config| config.readers = 32));
    }
}

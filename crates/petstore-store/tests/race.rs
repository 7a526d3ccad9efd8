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

//! The store's integration tests, in one test binary: each file below was a binary of its own,
//! and each linked Diesel, SQLite and libpq again (docs/testing.md has the times).

mod common;

mod conformance;
mod crash;
mod group_commit;
mod guards;
mod ledger;
mod migrations;
mod prices;
mod race;
mod transfer;

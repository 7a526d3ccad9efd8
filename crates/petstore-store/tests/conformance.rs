//! The domain's conformance kit, run against SQLite: each test on its own database file.

mod common;

petstore_core::conformance_suite!(common::TempStore::new, property_cases = 128);

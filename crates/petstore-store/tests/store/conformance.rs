//! The domain's conformance kit, run against SQLite (each test on its own database file) and
//! PostgreSQL (each test on its own scratch database; skipped without a server, see
//! `postgres_skipped.rs`).

use crate::common;

mod sqlite {
    petstore_core::conformance_suite!(super::common::TempStore::new, property_cases = 128);
}

mod postgres {
    petstore_core::conformance_suite!(
        super::common::TempPgStore::new,
        property_cases = 32,
        run_if = petstore_store::testing::postgres_configured
    );
}

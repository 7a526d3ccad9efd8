//! Says whether the PostgreSQL tests of this workspace run, and how to run them: without a
//! test harness, so that what it prints is shown by `cargo test` whatever it captures. It
//! checks nothing, so it prints no result line: a count of passed tests here would be one no
//! test earned.

fn main() {
    if petstore_store::testing::postgres_configured() {
        println!("PostgreSQL tests: running against the server in PETSTORE_TEST_POSTGRES_URL");
    } else {
        println!(
            "PostgreSQL tests: SKIPPED (no server configured). To run them, point \
             PETSTORE_TEST_POSTGRES_URL at a server where the tests may create databases, e.g. \
             PETSTORE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres cargo test --workspace"
        );
    }
}

//! `petstore serve --config FILE` as an operator runs it: flags over the environment over the
//! file over the defaults, errors that stop the start naming the setting and its line, and a
//! service that serves with what the file says.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use crate::binary::{petstore, serve_with};

fn print_config(database: &std::path::Path, config: &std::path::Path, flags: &[&str]) -> String {
    let output = petstore(database)
        .args(["serve", "--print-config", "--config"])
        .arg(config)
        .args(flags)
        .env("PETSTORE_DB_WAIT_MS", "1500")
        .env("PETSTORE_KEEP_ALIVE_SECS", "9")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn a_flag_wins_over_the_environment_which_wins_over_the_file_which_wins_over_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("shop.db");
    let config = dir.path().join("petstore.toml");
    std::fs::write(
        &config,
        "db-wait-ms = 700\nkeep-alive-secs = 3\nbody-timeout-ms = 4000\nworkers = 2\n",
    )
    .unwrap();
    let settings = print_config(&database, &config, &["--keep-alive-secs", "11"]);
    // keep-alive-secs: flag 11, environment 9, file 3.
    assert!(
        settings.contains("keep-alive-secs = 11  # a flag"),
        "{settings}"
    );
    // db-wait-ms: environment 1500, file 700.
    assert!(
        settings.contains("db-wait-ms = 1500  # the environment"),
        "{settings}"
    );
    // body-timeout-ms: file 4000, default 10000.
    assert!(
        settings.contains("body-timeout-ms = 4000  # the config file"),
        "{settings}"
    );
    assert!(
        settings.contains("client-timeout-ms = 5000  # the default"),
        "{settings}"
    );
    // The environment's PETSTORE_DATABASE, which the harness sets.
    let shown = format!("database = \"{}\"  # the environment", database.display());
    assert!(settings.contains(&shown), "{settings}");
    // --print-config starts nothing: no database was made.
    assert!(!database.exists());
}

#[test]
fn an_unknown_setting_or_a_wrong_type_stops_the_start_naming_it_and_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("shop.db");
    let config = dir.path().join("petstore.toml");
    for (text, says) in [
        (
            "bind = \"127.0.0.1:0\"\ndb-wait = 5\n",
            ":2: unknown setting `db-wait`",
        ),
        (
            "workers = \"two\"\n",
            ":1: `workers` must be a whole number",
        ),
        ("\n\nrate-limit = 0\n", ":3: `rate-limit`:"),
    ] {
        std::fs::write(&config, text).unwrap();
        let output = petstore(&database)
            .args(["serve", "--bind", "127.0.0.1:0", "--config"])
            .arg(&config)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{text}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(
            stderr.contains(&format!("{}{says}", config.display())),
            "{stderr}"
        );
        assert!(!database.exists(), "nothing started for {text}");
    }
    let output = petstore(&database)
        .args(["serve", "--config", "/nonexistent/petstore.toml"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("/nonexistent/petstore.toml"));
}

#[test]
fn the_service_serves_with_what_the_file_says() {
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("shop.db");
    let config = dir.path().join("petstore.toml");
    // A body limit of 64 bytes: a larger body is refused with 413.
    std::fs::write(&config, "max-body-bytes = 64\n").unwrap();
    let config_flag = config.to_str().unwrap();
    let server = serve_with(
        &database,
        Some("config-secret-0123456789abcdef0123456789"),
        &["--config", config_flag],
    );
    let key = "config-secret-0123456789abcdef0123456789";
    let small = server.post("/v1/categories", key, r#"{"name":"Dogs"}"#);
    assert!(small.starts_with("HTTP/1.1 201"), "{small}");
    let large = format!(r#"{{"name":"{}"}}"#, "c".repeat(100));
    let refused = server.post("/v1/categories", key, &large);
    assert!(refused.starts_with("HTTP/1.1 413"), "{refused}");
    assert!(refused.contains("payload_too_large"), "{refused}");
}

#[test]
fn read_standbys_are_listed_with_spaces_in_the_environment_so_a_url_keeps_its_commas() {
    let dir = tempfile::tempdir().unwrap();
    let many_hosts = "postgres://shop:secret@db2,db3/shop?target_session_attrs=standby";
    let output = petstore(dir.path().join("shop.db"))
        .env(
            "PETSTORE_DATABASE_REPLICAS",
            format!("{many_hosts} postgres://db4/shop"),
        )
        .args(["serve", "--print-config"])
        .output()
        .unwrap();
    let settings = String::from_utf8_lossy(&output.stdout);
    assert!(
        settings.contains(
            "database-replica = [\"postgres://shop:***@db2,db3/shop?target_session_attrs=standby\", \"postgres://db4/shop\"]  # the environment"
        ),
        "{settings}"
    );
    // A standby of a SQLite file is refused before anything starts.
    let output = petstore(dir.path().join("shop.db"))
        .args([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--database-replica",
            "postgres://db4/shop",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("--database-replica needs a PostgreSQL --database"),
        "{stderr}"
    );
    assert!(!dir.path().join("shop.db").exists(), "nothing started");
}

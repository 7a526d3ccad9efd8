#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use std::ffi::OsString;
use std::path::Path;

use super::*;
use crate::cli::{Command, ServeArgs};

/// `petstore serve <flags> --config <file holding text>`, parsed.
fn parse_with_file(text: &str, flags: &[&str]) -> Result<Invocation, CommandLineError> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("petstore.toml");
    std::fs::write(&file, text).unwrap();
    parse(&file, flags)
}

fn parse(file: &Path, flags: &[&str]) -> Result<Invocation, CommandLineError> {
    let mut args: Vec<OsString> = vec!["petstore".into(), "serve".into()];
    args.extend(flags.iter().map(OsString::from));
    args.extend(["--config".into(), file.as_os_str().to_owned()]);
    parse_command_line(args)
}

fn serve_args(invocation: Invocation) -> ServeArgs {
    match invocation {
        Invocation::Run(Cli {
            command: Command::Serve(args),
            ..
        }) => *args,
        other => panic!("expected serve, got {other:?}"),
    }
}

fn config_error(result: Result<Invocation, CommandLineError>) -> String {
    match result {
        Err(CommandLineError::Config(message)) => message,
        other => panic!("expected a config file error, got {other:?}"),
    }
}

fn printed(result: Result<Invocation, CommandLineError>) -> String {
    match result.unwrap() {
        Invocation::PrintConfig(text) => text,
        other => panic!("expected the settings printed, got {other:?}"),
    }
}

#[test]
fn the_file_sets_what_no_flag_sets_and_a_flag_wins_over_it() {
    let file = "db-wait-ms = 750\nbind = \"127.0.0.1:9000\"\nworkers = 3\n";
    let args = serve_args(parse_with_file(file, &["--bind", "127.0.0.1:9100"]).unwrap());
    assert_eq!(args.db_wait_ms, 750);
    assert_eq!(args.workers, Some(3));
    assert_eq!(args.bind, "127.0.0.1:9100");
    // What neither gives keeps its default.
    assert_eq!(args.keep_alive_secs, 5);
}

#[test]
fn lists_booleans_and_the_global_settings_come_from_the_file_too() {
    let file = "cors-origin = [\"https://a.example\", \"https://b.example\"]\n\
                webhook-allow-private-targets = true\n\
                database = \"shop.db\"\n\
                durability = \"normal\"\n\
                rate-limit = 50\n";
    let args = serve_args(parse_with_file(file, &[]).unwrap());
    assert_eq!(
        args.cors_origins,
        ["https://a.example", "https://b.example"]
    );
    assert!(args.webhooks.webhook_allow_private_targets);
    assert_eq!(args.database.database.to_string(), "shop.db");
    assert_eq!(args.database.durability, crate::cli::DurabilityArg::Normal);
    assert_eq!(args.rate_limit.get(), 50);
}

#[test]
fn an_unknown_setting_stops_the_start_naming_it_and_its_line() {
    let message = config_error(parse_with_file("bind = \"127.0.0.1:1\"\n\nbnd = 3\n", &[]));
    assert!(message.contains("petstore.toml:3:"), "{message}");
    assert!(message.contains("unknown setting `bnd`"), "{message}");
    // The file's own flags are not settings of the file.
    let message = config_error(parse_with_file("config = \"other.toml\"\n", &[]));
    assert!(
        message.contains("petstore.toml:1: unknown setting `config`"),
        "{message}"
    );
}

#[test]
fn a_wrong_type_stops_the_start_naming_the_setting_and_its_line() {
    let message = config_error(parse_with_file("# waits\ndb-wait-ms = \"2000\"\n", &[]));
    assert!(
        message.contains("petstore.toml:2: `db-wait-ms` must be a whole number"),
        "{message}"
    );
    let message = config_error(parse_with_file(
        "cors-origin = \"https://a.example\"\n",
        &[],
    ));
    assert!(
        message.contains("`cors-origin` must be a list of strings"),
        "{message}"
    );
    let message = config_error(parse_with_file("webhook-allow-private-targets = 1\n", &[]));
    assert!(message.contains("must be true or false"), "{message}");
    let message = config_error(parse_with_file("bind = 8080\n", &[]));
    assert!(message.contains("`bind` must be a string"), "{message}");
}

#[test]
fn a_value_its_flag_would_refuse_is_refused_with_its_line_even_where_a_flag_wins() {
    let message = config_error(parse_with_file(
        "bind = \"127.0.0.1:8080\"\nrate-limit = 0\n",
        &[],
    ));
    assert!(
        message.contains("petstore.toml:2: `rate-limit`:"),
        "{message}"
    );
    let message = config_error(parse_with_file(
        "durability = \"fast\"\n",
        &["--durability", "full"],
    ));
    assert!(
        message.contains("petstore.toml:1: `durability`:"),
        "{message}"
    );
}

#[test]
fn a_setting_that_needs_another_is_refused_without_it() {
    let error = parse_with_file(&format!("tls-cert = \"{CERTIFICATE}\"\n"), &[]);
    match error {
        Err(CommandLineError::Clap(error)) => assert!(error.to_string().contains("--tls-key")),
        other => panic!("expected the missing --tls-key, got {other:?}"),
    }
    let args = serve_args(
        parse_with_file(
            &format!("tls-cert = \"{CERTIFICATE}\"\n"),
            &["--tls-key", KEY],
        )
        .unwrap(),
    );
    assert_eq!(args.tls_cert.unwrap().to_str(), Some(CERTIFICATE));
}

/// A certificate and its key, as the files a setting names must be real (cli/values.rs).
const CERTIFICATE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/receiver.pem");
const KEY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/receiver-key.pem"
);

/// The example file with its paths moved to files and folders that exist here: a setting's
/// file is read, and its folder must exist, as the file is parsed.
fn example_here(folder: &Path) -> String {
    EXAMPLE
        .replace("/var/lib/petstore/", &format!("{}/", folder.display()))
        .replace("/etc/petstore/tls/fullchain.pem", CERTIFICATE)
        .replace("/etc/petstore/receivers-ca.pem", CERTIFICATE)
        .replace("/etc/petstore/tls/privkey.pem", KEY)
}

#[test]
fn a_file_that_is_not_toml_or_not_there_is_named() {
    let message = config_error(parse_with_file("bind = \n", &[]));
    assert!(message.contains("petstore.toml"), "{message}");
    assert!(message.contains("line 1"), "{message}");
    let message = config_error(parse(Path::new("/nonexistent/petstore.toml"), &[]));
    assert!(
        message.contains("cannot read the config file /nonexistent/petstore.toml"),
        "{message}"
    );
}

#[test]
fn print_config_shows_every_setting_where_it_came_from_and_masks_passwords() {
    let file = "database = \"postgres://shop:s3cret@db.example/shop\"\ndb-wait-ms = 750\n";
    let text = printed(parse_with_file(file, &["--print-config", "--workers", "2"]));
    assert!(
        text.contains("database = \"postgres://shop:***@db.example/shop\"  # the config file"),
        "{text}"
    );
    assert!(!text.contains("s3cret"), "{text}");
    assert!(
        text.contains("db-wait-ms = 750  # the config file"),
        "{text}"
    );
    assert!(text.contains("workers = 2  # a flag"), "{text}");
    assert!(
        text.contains("keep-alive-secs = 5  # the default"),
        "{text}"
    );
    assert!(text.contains("# admin-key-file is not set"), "{text}");
    assert!(
        text.contains("cors-origin = []") || text.contains("# cors-origin is not set"),
        "{text}"
    );
    // Every setting of serve has its line.
    for arg in serve_settings() {
        let name = arg.get_long().unwrap();
        assert!(
            text.lines()
                .any(|line| line.starts_with(&format!("{name} = "))
                    || line == format!("# {name} is not set")),
            "{name} missing from:\n{text}"
        );
    }
    // What it prints is a config file that gives the same settings (from the file now).
    let printed_again = printed(parse_with_file(
        &text.replace("***", "s3cret"),
        &["--print-config", "--workers", "2"],
    ));
    let settings = |text: &str| -> Vec<String> {
        text.lines()
            .map(|line| line.split("  # ").next().unwrap().to_owned())
            .collect()
    };
    assert_eq!(settings(&printed_again), settings(&text));
    assert!(
        printed_again.contains("keep-alive-secs = 5  # the config file"),
        "{printed_again}"
    );
}

#[test]
fn commands_other_than_serve_parse_as_before() {
    let invocation =
        parse_command_line(["petstore", "migrate", "--database", "x.db"].map(OsString::from))
            .unwrap();
    assert!(matches!(
        invocation,
        Invocation::Run(Cli {
            command: Command::Migrate(_),
            ..
        })
    ));
}

const EXAMPLE: &str = include_str!("../../../../../docs/deploy/petstore.toml");

#[test]
fn the_example_file_parses_with_every_setting_it_shows_commented_out_taken_in() {
    let folder = tempfile::tempdir().unwrap();
    let example = example_here(folder.path());
    serve_args(parse_with_file(&example, &[]).unwrap());
    // `# name = value   # why` lines, uncommented.
    let every: String = example
        .lines()
        .filter_map(|line| line.strip_prefix("# "))
        .filter(|line| {
            line.split(" = ").next().is_some_and(|name| {
                !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '-')
            })
        })
        .map(|line| format!("{}\n", line.split("  #").next().unwrap().trim_end()))
        .collect();
    let text = printed(parse_with_file(&every, &["--print-config"]));
    // Every setting of serve is in the example, set or commented out.
    for arg in serve_settings() {
        let name = arg.get_long().unwrap();
        let set_there = EXAMPLE
            .lines()
            .any(|line| line.starts_with(&format!("{name} = ")));
        assert!(
            set_there
                || text.contains(&format!("{name} = ")) && every.contains(&format!("{name} = ")),
            "docs/deploy/petstore.toml does not show `{name}`"
        );
    }
}

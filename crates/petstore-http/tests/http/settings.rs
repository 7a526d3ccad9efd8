//! Every setting of `serve`, taken from the command's own list of arguments (a new setting is
//! in this test by itself), given a bad value by each source an operator uses: a flag, an
//! environment variable, a line of the config file. Each is refused before anything happens:
//! exit 2, the source named, no panic, and no database, key file or other file created.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use clap::{ArgAction, CommandFactory};
use petstore_http::cli::Cli;

use crate::binary::petstore;

/// The settings a config file cannot hold: the file's own, and those that print and exit.
const NOT_SETTINGS: [&str; 4] = ["config", "print-config", "help", "version"];

/// A value no setting of `arg`'s kind accepts, as a flag's text and as TOML. A text setting
/// refuses a path in a folder that does not exist: no address, origin, URL, certificate, key
/// or database is one.
fn bad_value(arg: &clap::Arg) -> (String, String) {
    use std::any::TypeId;
    let type_id = arg.get_value_parser().type_id();
    let integers = [
        TypeId::of::<u16>(),
        TypeId::of::<u32>(),
        TypeId::of::<u64>(),
        TypeId::of::<usize>(),
        TypeId::of::<std::num::NonZeroU32>(),
    ];
    let text = "/no such folder/not a value";
    match arg.get_action() {
        ArgAction::SetTrue => ("maybe".into(), "\"maybe\"".into()),
        ArgAction::Append => (text.into(), format!("[\"{text}\"]")),
        _ if integers.iter().any(|integer| type_id == *integer) => ("-1".into(), "-1".into()),
        _ => (text.into(), format!("\"{text}\"")),
    }
}

/// `serve`'s settings (the global ones included), with their environment variables.
fn settings() -> Vec<clap::Arg> {
    let mut command = Cli::command();
    command.build();
    let serve = command.find_subcommand("serve").unwrap();
    let found: Vec<clap::Arg> = serve
        .get_arguments()
        .filter(|arg| {
            arg.get_long()
                .is_some_and(|long| !NOT_SETTINGS.contains(&long))
        })
        .cloned()
        .collect();
    assert!(found.len() > 20, "serve's settings: {found:?}");
    found
}

/// Runs `serve` in `dir` (its working directory, where a key file would go by default) on a
/// database in `dir`, with `flags`, `env` and nothing else of the test's environment, and
/// checks the refusal: exit 2, `names` in what it says, no panic, nothing new in `dir`.
fn refused(dir: &Path, flags: &[String], env: &[(String, String)], names: &str, what: &str) {
    let before = files_in(dir);
    let mut command = petstore(dir.join("shop.db"));
    command
        .current_dir(dir)
        .env("PETSTORE_ADMIN_KEY_FILE", dir.join("admin-key"))
        .arg("serve")
        .args(flags)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // A free port, unless the bind address is what is tested (a flag would hide the
    // environment's).
    let tests_bind = flags.iter().any(|flag| flag.starts_with("--bind"))
        || env.iter().any(|(variable, _)| variable == "PETSTORE_BIND");
    if !tests_bind {
        command.args(["--bind", "127.0.0.1:0"]);
    }
    for (variable, value) in env {
        command.env(variable, value);
    }
    let mut child = command.spawn().unwrap();
    // A value taken for good would start the service, which would run on.
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} was taken: the service still ran after 20 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let output = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{what}: {said}");
    assert!(said.contains(names), "{what} names {names:?}: {said}");
    assert!(!said.contains("panicked"), "{what}: {said}");
    assert_eq!(files_in(dir), before, "{what} created files");
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn every_setting_with_a_bad_value_from_any_source_is_refused_before_anything_happens() {
    let dir = tempfile::tempdir().unwrap();
    for arg in settings() {
        let long = arg.get_long().unwrap();
        let (text, toml) = bad_value(&arg);

        let flag = format!("--{long}");
        refused(
            dir.path(),
            &[format!("{flag}={text}")],
            &[],
            &flag,
            &format!("{flag}={text}"),
        );

        let variable = arg
            .get_env()
            .unwrap_or_else(|| panic!("{flag} has an environment variable"))
            .to_string_lossy()
            .into_owned();
        refused(
            dir.path(),
            &[],
            &[(variable.clone(), text.clone())],
            &variable,
            &format!("{variable}={text}"),
        );

        let config = tempfile::tempdir().unwrap();
        let file = config.path().join("petstore.toml");
        // The bad line is the third: the error must point at it, not at the file.
        std::fs::write(
            &file,
            format!("# settings\n# the next line is wrong\n{long} = {toml}\n"),
        )
        .unwrap();
        refused(
            dir.path(),
            &["--config".to_owned(), file.display().to_string()],
            &[],
            &format!("{}:3", file.display()),
            &format!("{long} = {toml} in a file"),
        );
    }
}

/// The one setting only the environment gives: a secret on a command line is seen by every
/// user of the machine.
#[test]
fn a_bootstrap_key_too_short_is_refused_before_anything_happens() {
    let dir = tempfile::tempdir().unwrap();
    refused(
        dir.path(),
        &[],
        &[("PETSTORE_BOOTSTRAP_ADMIN_KEY".into(), "short".into())],
        "PETSTORE_BOOTSTRAP_ADMIN_KEY",
        "a bootstrap key of 5 characters",
    );
}

/// Zero, which a whole number's type takes, is where counts break (no worker thread, a pool
/// of no connection): every whole-number setting at 0 is refused as a bad value (exit 2,
/// naming it, nothing created) or served with, and never a panic.
#[test]
fn every_whole_number_setting_at_zero_is_refused_or_served() {
    let (mut refused, mut served) = (Vec::new(), Vec::new());
    for arg in settings() {
        let (text, _) = bad_value(&arg);
        if text != "-1" {
            continue; // Not a whole number.
        }
        let long = arg.get_long().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut child = petstore(dir.path().join("shop.db"))
            .current_dir(dir.path())
            .env("PETSTORE_ADMIN_KEY_FILE", dir.path().join("admin-key"))
            .args(["serve", "--bind", "127.0.0.1:0", &format!("--{long}=0")])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (lines_tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                let _ = lines_tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut said = String::new();
        let address = loop {
            if let Ok(line) = lines.recv_timeout(Duration::from_millis(20)) {
                said.push_str(&line);
                said.push('\n');
                let event: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
                if event["fields"]["message"] == "petstore listening" {
                    break event["fields"]["address"].as_str().map(str::to_owned);
                }
            } else if child.try_wait().unwrap().is_some() {
                break None;
            }
            assert!(
                Instant::now() < deadline,
                "--{long}=0: neither refused nor serving"
            );
        };
        match address {
            Some(address) => {
                let health = crate::binary::send_to(&address, "GET", "/healthz", "", &[], None);
                assert_eq!(
                    health.map(|(status, _)| status),
                    Some(200),
                    "--{long}=0 serves"
                );
                let _ = std::process::Command::new("kill")
                    .args(["-TERM", &child.id().to_string()])
                    .status();
                let status = child.wait().unwrap();
                assert_eq!(status.code(), Some(0), "--{long}=0 stops cleanly: {said}");
                served.push(long.to_owned());
            }
            None => {
                let status = child.wait().unwrap();
                // Until the reader has read to the end of the exited process's standard
                // error: what it has not yet passed on is the refusal this looks for.
                said.extend(lines.iter().map(|line| line + "\n"));
                assert_eq!(status.code(), Some(2), "--{long}=0 is refused: {said}");
                assert!(
                    said.contains(&format!("--{long}")),
                    "--{long}=0 is named: {said}"
                );
                assert!(!said.contains("panicked"), "--{long}=0: {said}");
                assert_eq!(
                    files_in(dir.path()),
                    Vec::<String>::new(),
                    "--{long}=0 created files"
                );
                refused.push(long.to_owned());
            }
        }
    }
    println!("refused at 0: {refused:?}\nserved at 0: {served:?}");
    assert!(
        refused.iter().any(|s| s == "workers") && refused.iter().any(|s| s == "db-connections")
    );
    assert!(refused.len() + served.len() > 15, "{refused:?} {served:?}");
}

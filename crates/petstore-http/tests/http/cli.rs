//! The `petstore` binary itself: key commands, bootstrap keys, serving and SIGTERM.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use crate::binary;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use binary::{petstore, serve};
use petstore_store::testing::TestDatabase;

fn is_generated_key(text: &str) -> bool {
    text.len() == 68 && text.starts_with("pst_") && text[4..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// Every line is a JSON object: a log shipper reads them all.
fn assert_all_json(logs: &[String]) {
    for line in logs {
        assert!(
            serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(line).is_ok(),
            "not a JSON object: {line:?}"
        );
    }
}

#[test]
fn keys_create_prints_the_key_and_nothing_else() {
    let database = TestDatabase::new("cli");
    // Keys live in a database that exists: `migrate` (or `serve`) creates it.
    let migrated = petstore(database.arg()).arg("migrate").output().unwrap();
    assert!(migrated.status.success(), "{migrated:?}");
    let output = petstore(database.arg())
        .args([
            "keys",
            "create",
            "--role",
            "staff",
            "--name",
            "Warehouse sync",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let key = stdout.strip_suffix('\n').unwrap();
    assert!(
        is_generated_key(key),
        "stdout is exactly the key: {stdout:?}"
    );
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(!stderr.contains(&key[12..]), "the secret is not logged");

    let listed = petstore(database.arg())
        .args(["keys", "list"])
        .output()
        .unwrap();
    let table = String::from_utf8(listed.stdout).unwrap();
    assert!(
        table.contains(&key[..12]) && table.contains("Warehouse sync") && table.contains("active")
    );
    assert!(!table.contains(&key[12..]));
    // An aligned table: each column starts where its heading does, whatever the widths.
    let lines: Vec<&str> = table.lines().filter(|l| !l.trim().is_empty()).collect();
    let column = |line: &str, text: &str| line.find(text).unwrap();
    assert_eq!(
        column(lines[1], &key[..12]),
        column(lines[0], "prefix"),
        "{table}"
    );
    assert_eq!(
        column(lines[1], "Warehouse sync"),
        column(lines[0], "name"),
        "{table}"
    );

    let revoked = petstore(database.arg())
        .args(["keys", "revoke", "1"])
        .output()
        .unwrap();
    assert!(revoked.status.success(), "{revoked:?}");
    let listed = petstore(database.arg())
        .args(["keys", "list"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8(listed.stdout)
            .unwrap()
            .contains("revoked")
    );

    let bad = petstore(database.arg())
        .args(["keys", "create", "--role", "root", "--name", "x"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let said = String::from_utf8(bad.stderr).unwrap();
    assert!(
        said.contains("admin") && said.contains("staff") && said.contains("customer"),
        "{said}"
    );
    let help = petstore(database.arg())
        .args(["keys", "create", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(
        help.contains("[possible values: admin, staff, customer]"),
        "{help}"
    );
}

#[test]
fn a_bootstrap_key_from_the_environment_becomes_an_admin_key() {
    let database = TestDatabase::new("bootstrap");
    let chosen = "deploy-secret-0123456789abcdef0123456789";
    let server = serve(database.arg(), Some(chosen));
    let reply = server.get("/v1/keys", chosen);
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    let refused = server.get("/v1/keys", "some-other-secret-0123456789abcdef");
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    let (code, logs) = server.terminate();
    assert_eq!(code, Some(0), "SIGTERM drains and exits 0");
    assert!(
        !logs.iter().any(|line| line.contains(chosen)),
        "the key is never logged"
    );
}

/// A bootstrap key whose admin key was revoked (a rotation) neither stops a start nor comes
/// back to life: the start says which key it is and what to do.
#[test]
fn a_stale_bootstrap_key_neither_stops_a_start_nor_comes_back() {
    let database = TestDatabase::new("stale-bootstrap");
    let stale = "stale-bootstrap-0123456789abcdef0123456789";
    let server = serve(database.arg(), Some(stale));
    assert_eq!(server.terminate().0, Some(0));
    let revoked = petstore(database.arg())
        .args(["keys", "revoke", "1"])
        .output()
        .unwrap();
    assert!(revoked.status.success(), "{revoked:?}");

    let server = serve(database.arg(), Some(stale));
    let refused = server.get("/v1/keys", stale);
    assert!(
        refused.starts_with("HTTP/1.1 401"),
        "the key stays revoked: {refused}"
    );
    let (code, logs) = server.terminate();
    assert_eq!(code, Some(0));
    let said = logs
        .iter()
        .find(|line| line.contains("PETSTORE_BOOTSTRAP_ADMIN_KEY is not used"))
        .unwrap_or_else(|| panic!("the start says why: {logs:?}"));
    assert!(
        said.contains("already key 1, revoked")
            && said.contains("variable can be removed")
            && said.contains("keys create --role admin"),
        "{said}"
    );
    assert!(
        !logs.iter().any(|line| line.contains(stale)),
        "never logged"
    );
}

/// The admin key a first start wrote to `file`, which must be readable by its owner only.
fn written_key(file: &std::path::Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{} is {mode:o}", file.display());
    let key = std::fs::read_to_string(file).unwrap().trim_end().to_owned();
    assert!(is_generated_key(&key), "{key:?}");
    key
}

/// No line of the log holds `key`'s secret.
fn assert_never_logged(key: &str, logs: &[String]) {
    for line in logs {
        assert!(!line.contains(&key[4..]), "the secret was logged: {line}");
    }
}

/// A first start with no bootstrap key creates an admin key and writes it to a file the
/// service's user alone may read: never to the log, in either format, where a journal and
/// every log shipper would keep it. The next start creates none.
#[test]
fn a_first_start_writes_a_new_admin_key_to_a_private_file_never_to_the_log() {
    let database = TestDatabase::new("first");
    let server = serve(database.arg(), None);
    let key = written_key(&server.admin_key_file);
    std::thread::sleep(Duration::from_millis(200));
    let (code, first_logs) = server.terminate();
    assert_eq!(code, Some(0));
    assert_all_json(&first_logs);
    assert_never_logged(&key, &first_logs);
    assert!(
        first_logs.iter().any(|line| line.contains("admin-key")),
        "the log says where the key is: {first_logs:?}"
    );

    let server = serve(database.arg(), None);
    let reply = server.get("/v1/keys", &key);
    assert!(
        reply.starts_with("HTTP/1.1 200"),
        "the written key is an admin key: {reply}"
    );
    assert!(!server.admin_key_file.exists(), "created only once");
    std::thread::sleep(Duration::from_millis(200));
    let (code, second_logs) = server.terminate();
    assert_eq!(code, Some(0));
    assert_never_logged(&key, &second_logs);

    // In the text format too, the first start included.
    let database = TestDatabase::new("first-text");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("admin-key");
    let child = petstore(database.arg())
        .args(["--log-format", "text", "serve", "--workers", "1"])
        .args(["--bind", "127.0.0.1:0", "--admin-key-file"])
        .arg(&file)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !file.exists() {
        assert!(std::time::Instant::now() < deadline, "no key was written");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The key is created before the server listens: let it start, then stop it.
    std::thread::sleep(Duration::from_millis(300));
    let pid = child.id().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let output = child.wait_with_output().unwrap();
    let logs: Vec<String> = String::from_utf8_lossy(&output.stderr)
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(output.status.code(), Some(0), "{logs:?}");
    assert!(
        logs.iter().any(|line| line.contains("petstore listening")),
        "{logs:?}"
    );
    assert_never_logged(&written_key(&file), &logs);
}

/// Reads from `stream` until `done` holds for what was read, or 10 s pass.
fn read_until(stream: &mut TcpStream, done: impl Fn(&str) -> bool) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut text = String::new();
    let mut buffer = [0u8; 4096];
    while !done(&text) {
        assert!(
            std::time::Instant::now() < deadline,
            "gave up waiting; read: {text}"
        );
        match stream.read(&mut buffer) {
            Ok(0) => panic!("the stream closed; read: {text}"),
            Ok(n) => text.push_str(&String::from_utf8_lossy(&buffer[..n])),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("{e}"),
        }
    }
    text
}

/// The `id:` of each Server-Sent Events frame in `text`, with its `event:` type.
fn frames(text: &str) -> Vec<(u64, String)> {
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .filter_map(|pair| {
            let id = pair[0].strip_prefix("id: ")?.parse().ok()?;
            let kind = pair[1].strip_prefix("event: ")?.to_owned();
            Some((id, kind))
        })
        .collect()
}

#[test]
fn the_event_stream_sends_live_events_and_resumes_from_last_event_id() {
    let database = TestDatabase::new("stream");
    let key = "stream-admin-0123456789abcdef0123456789";
    let server = serve(database.arg(), Some(key));

    let mut live = server.open_stream(key, None);
    let head = read_until(&mut live, |text| text.contains(": connected"));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_lowercase()
            .contains("content-type: text/event-stream"),
        "{head}"
    );
    server.create_category(key, "Dogs");
    let seen = read_until(&mut live, |text| !frames(text).is_empty());
    let received = frames(&seen);
    assert_eq!(
        received.len(),
        1,
        "only live events, not earlier ones: {seen}"
    );
    let (last_id, kind) = received[0].clone();
    assert_eq!(kind, "category.created");
    assert!(seen.contains(r#""specversion":"1.0""#));
    drop(live);

    // Changes while the client is away.
    server.create_category(key, "Cats");
    server.create_category(key, "Birds");

    let mut resumed = server.open_stream(key, Some(last_id));
    let text = read_until(&mut resumed, |text| frames(text).len() >= 2);
    let missed: Vec<u64> = frames(&text).iter().map(|(id, _)| *id).collect();
    assert_eq!(
        missed,
        vec![last_id + 1, last_id + 2],
        "exactly the missed events, in order"
    );
    // And then live events on the same connection.
    server.create_category(key, "Fish");
    let more = read_until(&mut resumed, |text| !frames(text).is_empty());
    assert_eq!(
        frames(&more),
        vec![(last_id + 3, "category.created".to_owned())]
    );
    drop(resumed);

    let (code, _) = server.terminate();
    assert_eq!(code, Some(0));
}

#[test]
fn an_unreachable_postgres_url_is_named_without_its_password_and_fails() {
    // Port 1 on the loopback: nothing listens there.
    let url = "postgres://shop:s3cret-pw@127.0.0.1:1/shopdb";
    for command in [
        &["migrate"][..],
        &["keys", "list"],
        &["serve", "--bind", "127.0.0.1:0"],
    ] {
        let output = petstore(url).args(command).output().unwrap();
        assert!(!output.status.success(), "{command:?}: {output:?}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(
            stderr.contains("127.0.0.1") && stderr.contains("shopdb"),
            "{command:?} names host and database: {stderr}"
        );
        assert!(!stderr.contains("s3cret-pw"), "{command:?}: {stderr}");
    }
}

#[test]
fn a_start_that_cannot_listen_creates_nothing_and_keeps_the_first_key_for_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("unstarted.db");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let key_file = dir.path().join("admin-key");
    let failed = petstore(&database)
        .args(["serve", "--bind", &address, "--admin-key-file"])
        .arg(&key_file)
        .output()
        .unwrap();
    assert!(!failed.status.success(), "{failed:?}");
    let stderr = String::from_utf8(failed.stderr).unwrap();
    assert!(stderr.contains(&address), "says which address: {stderr}");
    assert!(!key_file.exists(), "no key minted: {stderr}");
    assert!(!database.exists(), "no database created");

    // The next start that can serve writes the first admin key.
    let server = serve(&database, None);
    let key = written_key(&server.admin_key_file);
    std::thread::sleep(Duration::from_millis(200));
    let (code, logs) = server.terminate();
    assert_eq!(code, Some(0));
    assert_never_logged(&key, &logs);
}

#[test]
fn a_body_that_stalls_is_answered_408_at_its_deadline() {
    let database = TestDatabase::new("stall");
    let key = "stall-admin-0123456789abcdef0123456789";
    let server = binary::serve_with(database.arg(), Some(key), &["--body-timeout-ms", "500"]);
    let mut stream = TcpStream::connect(&server.address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    // Ten of the hundred bytes promised, then nothing.
    write!(
        stream,
        "POST /v1/categories HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"name\": "
    )
    .unwrap();
    let started = std::time::Instant::now();
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    assert!(reply.starts_with("HTTP/1.1 408"), "{reply:?}");
    assert!(reply.contains(r#""code":"request_timeout""#), "{reply}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "at its deadline"
    );
    // The service answers everyone else meanwhile, and after.
    assert!(server.get("/healthz", key).starts_with("HTTP/1.1 200"));
}

#[test]
fn keys_commands_do_not_create_a_database_and_name_the_path_they_cannot_open() {
    let dir = tempfile::tempdir().unwrap();
    let typo = dir.path().join("typo.db");
    let listed = petstore(&typo).args(["keys", "list"]).output().unwrap();
    assert!(!listed.status.success(), "{listed:?}");
    let stderr = String::from_utf8(listed.stderr).unwrap();
    assert!(stderr.contains(typo.to_str().unwrap()), "{stderr}");
    assert!(!typo.exists(), "no database created");

    // A folder that does not exist is a bad setting, refused before anything is tried.
    let nowhere = dir.path().join("missing-folder/x.db");
    let served = petstore(&nowhere).args(["migrate"]).output().unwrap();
    assert_eq!(served.status.code(), Some(2), "{served:?}");
    let stderr = String::from_utf8(served.stderr).unwrap();
    assert!(
        stderr.contains(nowhere.to_str().unwrap()) && stderr.contains("does not exist"),
        "names the path: {stderr}"
    );
}

/// `petstore migrate` on a new database with the text log, `env` set, standard error captured
/// (through a terminal made by `script` when `tty`).
fn migrate_log(env: &[(&str, &str)], tty: bool) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("log.db");
    let mut command = if tty {
        let mut script = std::process::Command::new("script");
        script.args(["-qec", &format!("{} migrate", binary::BINARY), "/dev/null"]);
        script
    } else {
        let mut command = std::process::Command::new(binary::BINARY);
        command.arg("migrate");
        command
    };
    command
        .env("PETSTORE_DATABASE", &database)
        .env("PETSTORE_LOG_FORMAT", "text")
        .env_remove("RUST_LOG")
        .env_remove("PETSTORE_LOG")
        .env_remove("NO_COLOR");
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().ok()?;
    assert!(output.status.success(), "{output:?}");
    // `script` puts the terminal's output on its standard output.
    let text = [output.stdout, output.stderr].concat();
    Some(String::from_utf8(text).unwrap())
}

#[test]
fn the_log_honours_rust_log_and_colours_only_a_terminal_without_no_color() {
    let plain = migrate_log(&[], false).unwrap();
    assert!(plain.contains("migration applied"), "{plain}");
    assert!(
        !plain.contains('\u{1b}'),
        "no colour into a pipe: {plain:?}"
    );

    let quiet = migrate_log(&[("RUST_LOG", "warn")], false).unwrap();
    assert!(
        !quiet.contains("migration applied"),
        "RUST_LOG=warn: {quiet}"
    );
    let alias = migrate_log(&[("PETSTORE_LOG", "warn")], false).unwrap();
    assert!(
        !alias.contains("migration applied"),
        "PETSTORE_LOG=warn: {alias}"
    );
    let both = migrate_log(&[("RUST_LOG", "info"), ("PETSTORE_LOG", "warn")], false).unwrap();
    assert!(both.contains("migration applied"), "RUST_LOG wins: {both}");

    let Some(terminal) = migrate_log(&[], true) else {
        eprintln!("skipped the terminal half: `script` (util-linux) is not installed");
        return;
    };
    assert!(
        terminal.contains('\u{1b}'),
        "colour on a terminal: {terminal:?}"
    );
    let no_color = migrate_log(&[("NO_COLOR", "1")], true).unwrap();
    assert!(!no_color.contains('\u{1b}'), "NO_COLOR: {no_color:?}");
}

#[test]
fn head_sends_the_headers_of_a_get_and_no_body_on_the_wire() {
    let database = TestDatabase::new("head");
    let key = "head-admin-0123456789abcdef0123456789ab";
    let server = binary::serve_with(database.arg(), Some(key), &[]);
    let exchange = |method: &str, path: &str| {
        let reply = server.without_body(method, path, key);
        let (head, body) = reply.split_once("\r\n\r\n").unwrap();
        (head.to_owned(), body.to_owned())
    };
    for path in ["/openapi.json", "/v1/pets", "/healthz"] {
        let (get_head, get_body) = exchange("GET", path);
        let (head_head, head_body) = exchange("HEAD", path);
        assert!(head_head.starts_with("HTTP/1.1 200"), "{path}: {head_head}");
        assert!(head_body.is_empty(), "{path}: no body after a HEAD");
        let length = |head: &str| {
            head.lines().find_map(|line| {
                line.to_ascii_lowercase()
                    .strip_prefix("content-length: ")
                    .map(str::to_owned)
            })
        };
        assert_eq!(length(&head_head), length(&get_head), "{path}");
        assert_eq!(
            length(&get_head),
            Some(get_body.len().to_string()),
            "{path}"
        );
    }
    // The event stream's HEAD ends at once instead of streaming.
    let (head_head, head_body) = exchange("HEAD", "/v1/events/stream");
    assert!(head_head.starts_with("HTTP/1.1 200"), "{head_head}");
    assert!(head_head.to_ascii_lowercase().contains("text/event-stream"));
    assert!(head_body.is_empty());
}

#[test]
fn openapi_prints_the_document_the_service_serves() {
    let output = std::process::Command::new(binary::BINARY)
        .arg("openapi")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        printed,
        serde_json::to_value(petstore_http::openapi::document()).unwrap()
    );
}

/// A host whose open-file limit is low (1,024 is a common default; 128 here): the default
/// connection cap leaves the database its files, so idle clients past it wait to be accepted
/// instead of making the service fail with "Too many open files".
#[test]
fn the_connection_cap_leaves_room_in_a_low_open_file_limit() {
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("files.db");
    let key = "files-admin-0123456789abcdef0123456789ab";
    let mut command = std::process::Command::new("prlimit");
    command.args(["--nofile=128:128", "--", binary::BINARY]);
    command
        .env_remove("PETSTORE_BOOTSTRAP_ADMIN_KEY")
        .env("PETSTORE_DATABASE", &database)
        .env("PETSTORE_LOG_FORMAT", "json");
    let server = binary::serve_command(command, Some(key), &["--keep-alive-secs", "30"]);
    let mut said = Vec::new();
    while let Ok(line) = server.stderr.recv_timeout(Duration::from_millis(500)) {
        said.push(line);
    }
    let capped = said
        .iter()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|event| event["fields"]["message"] == "connections capped")
        .unwrap_or_else(|| panic!("the start says the cap: {said:?}"));
    let cap = capped["fields"]["max_connections"].as_u64().unwrap();
    assert_eq!(capped["fields"]["open_files_limit"], 128);
    assert!(cap < 128 - 64, "cap {cap} leaves the database its files");

    // More idle clients than the cap, each holding a connection open.
    let idle: Vec<TcpStream> = (0..150)
        .filter_map(|_| TcpStream::connect(&server.address).ok())
        .collect();
    assert!(
        idle.len() > usize::try_from(cap).unwrap(),
        "{} connected",
        idle.len()
    );
    // A client past them waits to be accepted, and is answered once the idle ones go; the
    // database never ran out of files meanwhile.
    let writer = {
        let address = server.address.clone();
        std::thread::spawn(move || {
            binary::send_to(
                &address,
                "POST",
                "/v1/categories",
                key,
                &[],
                Some(r#"{"name": "Dogs"}"#),
            )
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    drop(idle);
    let (status, body) = writer.join().unwrap().expect("an answer");
    assert_eq!(status, 201, "{body}");
    let mut server = server;
    let (_, logs) = server.stop();
    assert!(
        !logs.iter().any(|line| line.contains("Too many open files")),
        "{logs:?}"
    );
}

/// Sends raw bytes and reads until the server closes the connection (or 10 s pass).
fn exchange(address: &str, bytes: &[u8]) -> String {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(bytes).unwrap();
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply);
    String::from_utf8_lossy(&reply).into_owned()
}

/// The log's events at `level`.
fn events_at(logs: &[String], level: &str) -> Vec<serde_json::Value> {
    logs.iter()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|event| event["level"] == level)
        .collect()
}

/// A stranger's malformed requests are the client's mistakes: counted in `/metrics`, logged
/// at DEBUG (shown when asked for), never at ERROR, however many are sent.
#[test]
fn malformed_requests_are_counted_and_never_logged_as_errors() {
    let malformed: [&[u8]; 3] = [
        b"GARBAGE\r\n\r\n",
        b"GET /v1/pets HTTP/1.1\r\nHost: x\r\nNot a header\r\n\r\n",
        b"GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Long: \0\r\n\r\n",
    ];
    for (filter, shown) in [
        ("info", false),
        ("info,petstore_http::connections=debug", true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut command = petstore(dir.path().join("fuzzed.db"));
        command.env("RUST_LOG", filter);
        let key = "fuzz-admin-0123456789abcdef0123456789abc";
        let mut server = binary::serve_command(command, Some(key), &[]);
        for _ in 0..4 {
            for bytes in malformed {
                let reply = exchange(&server.address, bytes);
                assert!(reply.starts_with("HTTP/1.1 400"), "{reply:?}");
            }
        }
        let metrics = server.get("/metrics", key);
        let counted = metrics
            .lines()
            .find(|line| {
                line.starts_with(r#"petstore_http_connection_errors_total{reason="malformed"}"#)
            })
            .unwrap_or_else(|| panic!("counted: {metrics}"));
        assert!(counted.ends_with(" 12"), "{counted}");
        let (code, logs) = server.stop();
        assert_eq!(code, Some(0));
        let errors = events_at(&logs, "ERROR");
        assert!(
            errors.is_empty(),
            "no ERROR for a client's mistake: {errors:?}"
        );
        let told: Vec<_> = events_at(&logs, "DEBUG")
            .into_iter()
            .filter(|event| event["target"] == "petstore_http::connections")
            .collect();
        if shown {
            assert_eq!(told.len(), 12, "{logs:?}");
            assert_eq!(told[0]["fields"]["reason"], "malformed");
            let detail = told[0]["fields"]["detail"].as_str().unwrap();
            assert!(detail.starts_with("request parse error"), "{detail}");
        } else {
            assert!(told.is_empty(), "off unless asked for: {told:?}");
        }
    }
}

/// What actix-http answers itself, before a request exists for the service to answer: not
/// the JSON body. `docs/api.md` lists each of these cases with what the client gets.
#[test]
fn what_the_http_codec_answers_itself_is_what_the_api_document_lists() {
    let dir = tempfile::tempdir().unwrap();
    let key = "codec-admin-0123456789abcdef0123456789ab";
    let server = binary::serve_with(
        dir.path().join("codec.db"),
        Some(key),
        // Not less: actix-http counts the time-out from a clock it reads twice a second.
        &["--client-timeout-ms", "1000"],
    );
    let head_too_large = [
        b"GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Long: ".as_slice(),
        &[b'a'; 200_000],
        b"\r\n\r\n",
    ]
    .concat();
    let chunked_badly = format!(
        "POST /v1/categories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc0\r\n\r\n"
    );
    let cases: [(&str, &[u8], &str); 5] = [
        ("not HTTP", b"GARBAGE\r\n\r\n", "400"),
        (
            "a malformed header",
            b"GET / HTTP/1.1\r\nNot a header\r\n\r\n",
            "400",
        ),
        ("a head too large", &head_too_large, "431"),
        ("nothing in time", b"", "408"),
        ("bad chunked framing", chunked_badly.as_bytes(), "closed"),
    ];
    let document =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/api.md")).unwrap();
    let listed = document
        .split("### Answers the HTTP codec gives itself")
        .nth(1)
        .expect("docs/api.md lists the codec's own answers")
        .split("\n#")
        .next()
        .unwrap();
    for (case, bytes, answer) in cases {
        let reply = exchange(&server.address, bytes);
        if answer == "closed" {
            assert_eq!(reply, "", "{case}: closed with no answer");
        } else {
            assert!(
                reply.starts_with(&format!("HTTP/1.1 {answer} ")),
                "{case}: {reply:?}"
            );
            assert!(
                reply.contains("content-length: 0\r\n"),
                "{case}: no body: {reply:?}"
            );
            assert!(reply.contains("connection: close\r\n"), "{case}: {reply:?}");
        }
        let row = listed
            .lines()
            .find(|line| line.starts_with(&format!("| {case} |")))
            .unwrap_or_else(|| panic!("docs/api.md lists {case:?}: {listed}"));
        assert!(
            row.contains(answer),
            "docs/api.md says {row:?} for {case}, the service {answer}"
        );
    }
}

/// Serves one HTML page on a port of its own: a web origin (`http://127.0.0.1:<port>`).
fn serve_page(html: String) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut head = [0u8; 4096];
            let _ = stream.read(&mut head);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{html}",
                html.len()
            );
        }
    });
    port
}

/// The page's text once headless Chromium has run its script.
fn page_text(chromium: &str, port: u16, profile: &std::path::Path) -> String {
    let out = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=10000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--dump-dom", &format!("http://127.0.0.1:{port}/")])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// CORS in a real browser: a page from an allowed origin creates a category with a bearer
/// key (a call that needs a preflight) and reads the answer and its exposed `X-Request-Id`;
/// the same page from another origin is refused by the browser, and its call never happens.
#[test]
fn a_page_of_an_allowed_origin_calls_the_api_from_a_browser_and_another_cannot() {
    let Some(chromium) = ["chromium", "chromium-browser"].into_iter().find(|name| {
        std::process::Command::new(name)
            .arg("--version")
            .output()
            .is_ok_and(|out| out.status.success())
    }) else {
        eprintln!("skipped: Chromium is not installed (Debian's `chromium`)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let key = "cors-admin-0123456789abcdef0123456789abc";
    // The page's origin must be known before the service starts: its port is taken first.
    let api = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let api_port = api.local_addr().unwrap().port();
    drop(api);
    let page = |name: &str| {
        format!(
            r#"<!doctype html><html><body><p id="out">waiting</p><script>
fetch("http://127.0.0.1:{api_port}/v1/categories", {{
  method: "POST",
  headers: {{"Authorization": "Bearer {key}", "Content-Type": "application/json"}},
  body: JSON.stringify({{name: "{name}"}})
}}).then(function (r) {{
  return r.json().then(function (body) {{
    document.getElementById("out").textContent =
      "status " + r.status + " name " + body.name + " request " + r.headers.get("X-Request-Id");
  }});
}}).catch(function (e) {{ document.getElementById("out").textContent = "refused " + e; }});
</script></body></html>"#
        )
    };
    let allowed = serve_page(page("From the shop"));
    let other = serve_page(page("From elsewhere"));
    let server = binary::serve_command(
        petstore(dir.path().join("cors.db")),
        Some(key),
        &[
            "--bind",
            &format!("127.0.0.1:{api_port}"),
            "--cors-origin",
            &format!("http://127.0.0.1:{allowed}"),
        ],
    );

    let shown = page_text(chromium, allowed, &dir.path().join("profile-a"));
    assert!(
        shown.contains("status 201 name From the shop request "),
        "the allowed page read the answer: {shown}"
    );
    assert!(
        !shown.contains("request null"),
        "X-Request-Id is exposed: {shown}"
    );
    let shown = page_text(chromium, other, &dir.path().join("profile-b"));
    assert!(
        shown.contains("refused"),
        "the browser refused the other origin: {shown}"
    );

    let listed = server.get("/v1/categories", key);
    assert!(listed.contains("From the shop"), "{listed}");
    assert!(!listed.contains("From elsewhere"), "never sent: {listed}");
}

/// `petstore_ready` says the truth on a node nobody probes (nginx checks nothing by itself):
/// the service checks its own readiness from the start, so a healthy node is 1 without any
/// call of `/readyz`, and an alert on 0 fires only for a node really not ready.
#[test]
fn a_healthy_node_that_nobody_probed_is_ready_in_its_metrics() {
    let database = TestDatabase::new("ready");
    let key = "ready-admin-0123456789abcdef0123456789abc";
    let server = serve(database.arg(), Some(key));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let metrics = server.get("/metrics", key);
        if metrics.lines().any(|line| line == "petstore_ready 1") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not ready after 10 s, though nothing is wrong: {metrics}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (code, logs) = server.terminate();
    assert_eq!(code, Some(0));
    assert!(
        !logs.iter().any(|line| line.contains("/readyz")),
        "nothing called /readyz: {logs:?}"
    );
}

/// A first start that cannot write its admin key's file stops before it creates the key: the
/// next start that can write it creates the first and only one, and the starts after it
/// write nothing.
#[test]
fn a_first_start_that_cannot_write_the_key_file_creates_no_key_and_a_restart_writes_none() {
    let database = TestDatabase::new("unwritable");
    // A folder that exists and takes no new file, even from root.
    let nowhere = std::path::Path::new("/proc/petstore-admin-key");
    let failed = petstore(database.arg())
        .args(["serve", "--bind", "127.0.0.1:0", "--admin-key-file"])
        .arg(nowhere)
        .output()
        .unwrap();
    assert!(!failed.status.success(), "{failed:?}");
    let stderr = String::from_utf8(failed.stderr).unwrap();
    assert!(
        stderr.contains("cannot write the first admin key")
            && stderr.contains("/proc/petstore-admin-key"),
        "{stderr}"
    );

    let server = serve(database.arg(), None);
    let key = written_key(&server.admin_key_file);
    let listed = server.get("/v1/keys", &key);
    assert!(listed.starts_with("HTTP/1.1 200"), "{listed}");
    let body = listed.split("\r\n\r\n").nth(1).unwrap();
    let keys: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(
        keys.as_array().map(Vec::len),
        Some(1),
        "the failed start created no key: {keys}"
    );
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(server.terminate().0, Some(0));

    // Once a key exists, a start writes no file: one whose folder cannot be written starts.
    let server = binary::serve_with(
        database.arg(),
        None,
        &["--admin-key-file", nowhere.to_str().unwrap()],
    );
    assert!(server.get("/v1/keys", &key).starts_with("HTTP/1.1 200"));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(server.terminate().0, Some(0));
    assert!(!nowhere.exists());
}

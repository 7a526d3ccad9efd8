//! The `petstore` binary itself: key commands, bootstrap keys, serving and SIGTERM.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const BINARY: &str = env!("CARGO_BIN_EXE_petstore");

fn petstore(database: &Path) -> Command {
    let mut command = Command::new(BINARY);
    command
        .env_remove("PETSTORE_BOOTSTRAP_ADMIN_KEY")
        .env("PETSTORE_DATABASE", database)
        .env("PETSTORE_LOG_FORMAT", "json");
    command
}

fn is_generated_key(text: &str) -> bool {
    text.len() == 68 && text.starts_with("pst_") && text[4..].bytes().all(|b| b.is_ascii_hexdigit())
}

#[test]
fn keys_create_prints_the_key_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("cli.db");
    let output = petstore(&database)
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

    let listed = petstore(&database).args(["keys", "list"]).output().unwrap();
    let table = String::from_utf8(listed.stdout).unwrap();
    assert!(
        table.contains(&key[..12]) && table.contains("Warehouse sync") && table.contains("active")
    );
    assert!(!table.contains(&key[12..]));

    let revoked = petstore(&database)
        .args(["keys", "revoke", "1"])
        .output()
        .unwrap();
    assert!(revoked.status.success());
    let listed = petstore(&database).args(["keys", "list"]).output().unwrap();
    assert!(
        String::from_utf8(listed.stdout)
            .unwrap()
            .contains("revoked")
    );

    let bad = petstore(&database)
        .args(["keys", "create", "--role", "root", "--name", "x"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
}

/// A running `petstore serve` and the address it listens on.
struct Server {
    child: Child,
    address: String,
    stderr: mpsc::Receiver<String>,
}

fn serve(database: &Path, bootstrap: Option<&str>) -> Server {
    let mut command = petstore(database);
    command
        .args(["serve", "--bind", "127.0.0.1:0", "--workers", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(key) = bootstrap {
        command.env("PETSTORE_BOOTSTRAP_ADMIN_KEY", key);
    }
    let mut child = command.spawn().unwrap();
    let (lines_tx, lines) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let (address_tx, address_rx) = mpsc::channel();
    let (rest_tx, rest) = mpsc::channel();
    std::thread::spawn(move || {
        let mut address_tx = Some(address_tx);
        for line in lines {
            if let Ok(event) = serde_json::from_str::<serde_json::Value>(&line)
                && event["fields"]["message"] == "petstore listening"
                && let Some(tx) = address_tx.take()
            {
                let _ = tx.send(
                    event["fields"]["address"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                );
            }
            if rest_tx.send(line).is_err() {
                break;
            }
        }
    });
    let address = address_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the server listens");
    Server {
        child,
        address,
        stderr: rest,
    }
}

impl Server {
    fn get(&self, path: &str, key: &str) -> String {
        let mut stream = TcpStream::connect(&self.address).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {key}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        reply
    }

    /// Sends a request with a JSON body and reads the whole answer.
    fn post(&self, path: &str, key: &str, body: &str) -> String {
        let mut stream = TcpStream::connect(&self.address).unwrap();
        write!(
            stream,
            "POST {path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        reply
    }

    /// Creates a category, which records one event.
    fn create_category(&self, key: &str, name: &str) {
        let reply = self.post("/v1/categories", key, &format!(r#"{{"name": "{name}"}}"#));
        assert!(reply.starts_with("HTTP/1.1 201"), "{reply}");
    }

    /// Opens the event stream, after `last_event_id` if given.
    fn open_stream(&self, key: &str, last_event_id: Option<u64>) -> TcpStream {
        let mut stream = TcpStream::connect(&self.address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let resume = last_event_id.map_or(String::new(), |id| format!("Last-Event-ID: {id}\r\n"));
        write!(
            stream,
            "GET /v1/events/stream HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {key}\r\n{resume}\r\n"
        )
        .unwrap();
        stream
    }

    /// SIGTERM, then the exit code.
    fn terminate(mut self) -> (Option<i32>, Vec<String>) {
        self.stop()
    }

    fn stop(&mut self) -> (Option<i32>, Vec<String>) {
        let pid = self.child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        let status = self.child.wait().unwrap();
        (status.code(), self.stderr.try_iter().collect())
    }
}

impl Drop for Server {
    /// A failed assertion must not leave a server running.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_bootstrap_key_from_the_environment_becomes_an_admin_key() {
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("bootstrap.db");
    let chosen = "deploy-secret-0123456789abcdef0123456789";
    let server = serve(&database, Some(chosen));
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

#[test]
fn a_first_start_prints_a_new_admin_key_once() {
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("first.db");
    let server = serve(&database, None);
    std::thread::sleep(Duration::from_millis(200));
    let (code, first_logs) = server.terminate();
    assert_eq!(code, Some(0));
    let printed: Vec<&str> = first_logs
        .iter()
        .map(|line| line.trim())
        .filter(|line| is_generated_key(line))
        .collect();
    assert_eq!(printed.len(), 1, "{first_logs:?}");
    let key = printed[0].to_owned();

    let server = serve(&database, None);
    let reply = server.get("/v1/keys", &key);
    assert!(
        reply.starts_with("HTTP/1.1 200"),
        "the printed key is an admin key: {reply}"
    );
    let (code, second_logs) = server.terminate();
    assert_eq!(code, Some(0));
    assert!(
        !second_logs.iter().any(|line| is_generated_key(line.trim())),
        "printed only once"
    );
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
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("stream.db");
    let key = "stream-admin-0123456789abcdef0123456789";
    let server = serve(&database, Some(key));

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

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

//! The `petstore` binary, started as a deployment would: its command, a running server, and
//! plain HTTP/1.1 requests to it.

#![allow(dead_code, reason = "each test file uses its own part of this module")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub(crate) const BINARY: &str = env!("CARGO_BIN_EXE_petstore");

/// The binary, on `database` (a SQLite file or a PostgreSQL URL), logging JSON.
pub(crate) fn petstore(database: impl AsRef<OsStr>) -> Command {
    configured(Command::new(BINARY), database)
}

/// The binary run as `nobody` (by `setpriv`): the tests run as root, whom file permissions
/// do not stop.
pub(crate) fn petstore_as_nobody(database: impl AsRef<OsStr>) -> Command {
    let mut command = Command::new("setpriv");
    command.args(["--reuid=65534", "--regid=65534", "--clear-groups", BINARY]);
    configured(command, database)
}

fn configured(mut command: Command, database: impl AsRef<OsStr>) -> Command {
    // The test server's read standby, where the run names one (`.ci/run`): every node reads
    // from it, and every test must pass as it is.
    match petstore_store::testing::replica_for(&database.as_ref().to_string_lossy()) {
        Some(replica) => command.env("PETSTORE_DATABASE_REPLICAS", replica),
        None => command.env_remove("PETSTORE_DATABASE_REPLICAS"),
    };
    command
        .env_remove("PETSTORE_BOOTSTRAP_ADMIN_KEY")
        .env("PETSTORE_DATABASE", database)
        .env("PETSTORE_LOG_FORMAT", "json");
    command
}

/// One HTTP/1.1 request as a test's receiver (of webhooks, of traces) reads it.
pub(crate) struct IncomingRequest {
    /// `POST /path HTTP/1.1`, line end included.
    pub line: String,
    /// The headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body, as long as `Content-Length` says.
    pub body: Vec<u8>,
}

impl IncomingRequest {
    /// The next request on `reader`, or `None` when the client closed the connection first.
    pub(crate) fn read(reader: &mut impl BufRead) -> Option<Self> {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return None;
        }
        let mut headers = Vec::new();
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).unwrap();
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap();
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
        let mut request = Self {
            line,
            headers,
            body: Vec::new(),
        };
        request.body = vec![0; request.header("content-length").parse().unwrap_or(0)];
        reader.read_exact(&mut request.body).unwrap();
        Some(request)
    }

    /// A header's value, or "" without it.
    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map_or("", |(_, v)| v.as_str())
    }
}

/// A running `petstore serve` and the address it listens on.
pub(crate) struct Server {
    pub child: Child,
    pub address: String,
    pub stderr: mpsc::Receiver<String>,
    /// Where a first start writes its admin key (`--admin-key-file`): a folder of the test's
    /// own, unless the test named a file.
    pub admin_key_file: std::path::PathBuf,
    _key_dir: tempfile::TempDir,
}

pub(crate) fn serve(database: impl AsRef<OsStr>, bootstrap: Option<&str>) -> Server {
    serve_with(database, bootstrap, &[])
}

/// `serve` with more flags.
pub(crate) fn serve_with(
    database: impl AsRef<OsStr>,
    bootstrap: Option<&str>,
    flags: &[&str],
) -> Server {
    serve_command(petstore(database), bootstrap, flags)
}

/// `serve` with more flags, by `command` (from [`petstore`] or [`petstore_as_nobody`]).
pub(crate) fn serve_command(
    mut command: Command,
    bootstrap: Option<&str>,
    flags: &[&str],
) -> Server {
    command
        .args(["serve", "--workers", "1"])
        // Any free port, unless the test chose one.
        .args(if flags.contains(&"--bind") {
            &[][..]
        } else {
            &["--bind", "127.0.0.1:0"][..]
        })
        .args(flags)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let key_dir = tempfile::tempdir().unwrap();
    let admin_key_file = match flags.iter().position(|flag| *flag == "--admin-key-file") {
        Some(at) => std::path::PathBuf::from(flags[at + 1]),
        None => key_dir.path().join("admin-key"),
    };
    command.env("PETSTORE_ADMIN_KEY_FILE", &admin_key_file);
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
        admin_key_file,
        _key_dir: key_dir,
    }
}

impl Server {
    pub(crate) fn get(&self, path: &str, key: &str) -> String {
        self.without_body("GET", path, key)
    }

    pub(crate) fn delete(&self, path: &str, key: &str) -> String {
        self.without_body("DELETE", path, key)
    }

    /// Sends a request without a body and reads the whole answer.
    pub(crate) fn without_body(&self, method: &str, path: &str, key: &str) -> String {
        let mut stream = TcpStream::connect(&self.address).unwrap();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {key}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        reply
    }

    /// Sends a request with a JSON body and reads the whole answer.
    pub(crate) fn post(&self, path: &str, key: &str, body: &str) -> String {
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

    /// Sends any request (see [`send_to`]).
    pub(crate) fn send(
        &self,
        method: &str,
        path: &str,
        key: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Option<(u16, String)> {
        send_to(&self.address, method, path, key, headers, body)
    }

    /// Creates a category, which records one event; its id.
    pub(crate) fn create_category(&self, key: &str, name: &str) -> i64 {
        let reply = self.post("/v1/categories", key, &format!(r#"{{"name": "{name}"}}"#));
        assert!(reply.starts_with("HTTP/1.1 201"), "{reply}");
        json_body(&reply)["id"]
            .as_i64()
            .unwrap_or_else(|| panic!("no id in {reply}"))
    }

    /// Makes the shop's first pet, Rex, in a first category, with `quantity` in stock: the
    /// category's id and the pet's, as given (a PostgreSQL sequence may skip a value: a write
    /// run again keeps the one it took).
    pub(crate) fn first_pet_with_stock(&self, key: &str, quantity: u32) -> (i64, i64) {
        let category = self.create_category(key, "Dogs");
        let made = self.post(
            "/v1/pets",
            key,
            &format!(r#"{{"name": "Rex", "categoryId": {category}}}"#),
        );
        assert!(made.starts_with("HTTP/1.1 201"), "{made}");
        let pet = json_body(&made)["id"]
            .as_i64()
            .unwrap_or_else(|| panic!("no id in {made}"));
        let stocked = self
            .send(
                "PATCH",
                &format!("/v1/inventory/{pet}"),
                key,
                &[],
                Some(&format!(r#"{{"quantity": {quantity}}}"#)),
            )
            .unwrap();
        assert_eq!(stocked.0, 200, "{}", stocked.1);
        (category, pet)
    }

    /// Opens the event stream, after `last_event_id` if given.
    pub(crate) fn open_stream(&self, key: &str, last_event_id: Option<u64>) -> TcpStream {
        let mut stream = TcpStream::connect(&self.address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let resume = last_event_id.map_or(String::new(), |id| format!("Last-Event-ID: {id}\r\n"));
        write!(
            stream,
            // Asking for compression: the stream must come plain all the same, event by event.
            "GET /v1/events/stream HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {key}\r\nAccept-Encoding: gzip, br, zstd\r\n{resume}\r\n"
        )
        .unwrap();
        stream
    }

    /// SIGTERM, then the exit code.
    pub(crate) fn terminate(mut self) -> (Option<i32>, Vec<String>) {
        self.stop()
    }

    pub(crate) fn stop(&mut self) -> (Option<i32>, Vec<String>) {
        self.signal("TERM");
        self.exited()
    }

    /// Waits for the process to end (after a signal sent by [`signal`](Self::signal)): its
    /// exit code and what it logged.
    pub(crate) fn exited(&mut self) -> (Option<i32>, Vec<String>) {
        let status = self.child.wait().unwrap();
        (status.code(), self.stderr.try_iter().collect())
    }
}

impl Server {
    /// Sends the signal `name` (`TERM`, `HUP`) to the process.
    pub(crate) fn signal(&self, name: &str) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args([&format!("-{name}"), &pid])
            .status();
        assert!(sent.unwrap().success(), "kill -{name} {pid}");
    }

    /// SIGKILL: the process gets no chance to finish anything.
    pub(crate) fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Server {
    /// A failed assertion must not leave a server running.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The names of the categories in the SQLite file `file`, read by a connection of its own.
pub(crate) fn category_names(file: &std::path::Path) -> Vec<String> {
    use diesel::{Connection, RunQueryDsl, SqliteConnection};
    #[derive(diesel::QueryableByName)]
    struct Named {
        #[diesel(sql_type = diesel::sql_types::Text)]
        name: String,
    }
    let mut conn = SqliteConnection::establish(file.to_str().unwrap()).unwrap();
    diesel::sql_query("SELECT name FROM categories ORDER BY id")
        .load::<Named>(&mut conn)
        .unwrap()
        .into_iter()
        .map(|row| row.name)
        .collect()
}

/// The JSON body of a whole HTTP answer as `Server` reads it.
pub(crate) fn json_body(reply: &str) -> serde_json::Value {
    let (_, body) = reply.split_once("\r\n\r\n").unwrap();
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {reply}"))
}

/// Sends any request to the server at `address`, with extra headers and an optional JSON
/// body: its status and body, or `None` when the server cannot be reached or closes the
/// connection before answering (a killed node).
pub(crate) fn send_to(
    address: &str,
    method: &str,
    path: &str,
    key: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Option<(u16, String)> {
    exchange(address, method, path, key, headers, body).map(|answer| (answer.status, answer.body))
}

/// One answer: status, headers (names in lower case) and body.
pub(crate) struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    /// A header's value, if the answer has it.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// [`send_to`], keeping the answer's headers.
pub(crate) fn exchange(
    address: &str,
    method: &str,
    path: &str,
    key: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Option<Answer> {
    let mut stream = TcpStream::connect(address).ok()?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {key}\r\nConnection: close\r\n"
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    head.push_str(body.unwrap_or(""));
    stream.write_all(head.as_bytes()).ok()?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply).ok()?;
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    let mut lines = head.lines();
    let status = lines.next()?.get(9..12)?.parse().ok()?;
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    Some(Answer {
        status,
        headers,
        body: body.to_owned(),
    })
}

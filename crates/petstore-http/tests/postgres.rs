//! The binary on PostgreSQL when the database goes away and comes back: requests get 503 with
//! `Retry-After`, `/readyz` says not ready, and the service recovers by itself, with nothing
//! acknowledged lost. The outage is a TCP proxy between the service and the server that drops
//! every connection and refuses new ones. Runs where `PETSTORE_TEST_POSTGRES_URL` is set.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod binary;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use binary::serve_with;
use petstore_store::testing::ScratchPostgres;

const ADMIN: &str = "outage-admin-0123456789abcdef0123456789";

/// A TCP proxy to `upstream` that can be cut (every connection dropped, new ones refused)
/// and restored.
struct Proxy {
    port: u16,
    up: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    fn start(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(AtomicBool::new(true));
        let open = Arc::new(Mutex::new(Vec::new()));
        let (accepting, tracked) = (Arc::clone(&up), Arc::clone(&open));
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if !accepting.load(Ordering::SeqCst) {
                    continue; // dropped: the connection is closed at once
                }
                let Ok(server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                let mut streams = tracked.lock().unwrap();
                // Cut while this one was connecting upstream: it is dropped, not left open
                // past the cut.
                if !accepting.load(Ordering::SeqCst) {
                    continue;
                }
                streams.push(client.try_clone().unwrap());
                streams.push(server.try_clone().unwrap());
                pipe(client.try_clone().unwrap(), server.try_clone().unwrap());
                pipe(server, client);
            }
        });
        Proxy { port, up, open }
    }

    fn cut(&self) {
        // Under the lock the accepting thread registers connections with: none slips past.
        let mut open = self.open.lock().unwrap();
        self.up.store(false, Ordering::SeqCst);
        for stream in open.drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

fn pipe(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let mut buffer = [0u8; 16 * 1024];
        while let Ok(n) = from.read(&mut buffer) {
            if n == 0 || to.write_all(&buffer[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Both);
    });
}

/// The host and port of a `postgres://…` URL, and the URL with them replaced by `port` on
/// 127.0.0.1.
fn through_proxy(url: &str, port: u16) -> (String, String) {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap());
    let (user, host) = match authority.rsplit_once('@') {
        Some((user, host)) => (format!("{user}@"), host),
        None => (String::new(), authority),
    };
    let upstream = if host.contains(':') {
        host.to_owned()
    } else {
        format!("{host}:5432")
    };
    (upstream, format!("{scheme}://{user}127.0.0.1:{port}{path}"))
}

fn status(reply: &str) -> u16 {
    reply[9..12].parse().unwrap()
}

#[test]
fn an_outage_is_503_until_the_database_is_back_and_loses_nothing() {
    let Some(database) = ScratchPostgres::create() else {
        return;
    };
    let (upstream, _) = through_proxy(database.url(), 0);
    let proxy = Proxy::start(upstream);
    let (_, url) = through_proxy(database.url(), proxy.port);
    let server = serve_with(&url, Some(ADMIN), &["--db-wait-ms", "300"]);
    server.create_category(ADMIN, "Before");

    proxy.cut();
    let read = server.get("/v1/categories", ADMIN);
    assert_eq!(status(&read), 503, "{read}");
    assert!(read.to_lowercase().contains("retry-after: "), "{read}");
    assert!(read.contains(r#""code":"unavailable""#), "{read}");
    let write = server.post("/v1/categories", ADMIN, r#"{"name": "During"}"#);
    assert_eq!(status(&write), 503, "{write}");
    let ready = server.get("/readyz", ADMIN);
    assert_eq!(status(&ready), 503, "{ready}");

    proxy.restore();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let ready = server.get("/readyz", ADMIN);
        if status(&ready) == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "never ready again: {ready}");
        std::thread::sleep(Duration::from_millis(100));
    }
    server.create_category(ADMIN, "After");
    let listed = server.get("/v1/categories", ADMIN);
    assert!(
        listed.contains(r#""name":"Before""#) && listed.contains(r#""name":"After""#),
        "{listed}"
    );
    assert!(
        !listed.contains(r#""name":"During""#),
        "a write answered 503 did not happen: {listed}"
    );
}

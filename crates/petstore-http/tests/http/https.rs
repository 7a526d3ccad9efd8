//! HTTPS from the binary (`--tls-cert`, `--tls-key`), with a CA of the test's own made by
//! `openssl`: curl verifying the chain over HTTP/2 (ALPN) and HTTP/1.1, metrics, the event
//! stream and webhook deliveries over it; a renewed certificate served after SIGHUP by the
//! same process while an open connection goes on; bad files refused at start; plain HTTP to
//! the TLS port answered without harm.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use petstore_store::testing::TestDatabase;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

use crate::binary::{Server, petstore, serve_with};
use crate::cluster::Authority;
use crate::webhooks::Receiver;

const ADMIN: &str = "https-admin-0123456789abcdef0123456789ab";

/// A test CA and a server certificate it signed, as files in a folder of their own.
struct Certificates {
    dir: tempfile::TempDir,
    authority: Authority,
}

impl Certificates {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let authority = Authority::new(dir.path(), "test-ca");
        let certificates = Certificates { dir, authority };
        certificates.renew();
        certificates
    }

    /// Signs a new key and certificate and writes them where the server reads them; returns
    /// the certificate's DER.
    fn renew(&self) -> Vec<u8> {
        let (certificate, key) = self.authority.sign_server();
        std::fs::write(self.certificate(), &certificate).unwrap();
        std::fs::write(self.key(), &key).unwrap();
        der(&certificate)
    }

    fn certificate(&self) -> PathBuf {
        self.dir.path().join("served.pem")
    }

    fn key(&self) -> PathBuf {
        self.dir.path().join("served.key")
    }

    fn flags(&self) -> Vec<String> {
        vec![
            "--tls-cert".into(),
            self.certificate().display().to_string(),
            "--tls-key".into(),
            self.key().display().to_string(),
        ]
    }

    fn serve(&self, database: &TestDatabase, more: &[&str]) -> Server {
        let flags = self.flags();
        let mut all: Vec<&str> = flags.iter().map(String::as_str).collect();
        all.extend(more);
        serve_with(database.arg(), Some(ADMIN), &all)
    }
}

fn der(pem: &[u8]) -> Vec<u8> {
    CertificateDer::pem_slice_iter(pem)
        .next()
        .unwrap()
        .unwrap()
        .to_vec()
}

/// curl verifying the server's chain against the test CA; its output.
fn curl(ca: &Path, args: &[&str]) -> String {
    let output = Command::new("curl")
        .args(["-sS", "--cacert"])
        .arg(ca)
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success() || output.status.code() == Some(28),
        "curl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn url(server: &Server, path: &str) -> String {
    format!("https://{}{path}", server.address)
}

#[test]
fn https_serves_http2_by_alpn_and_http1_with_a_chain_curl_verifies() {
    let certificates = Certificates::new();
    let database = TestDatabase::new("https");
    let receiver = Receiver::start();
    let server = certificates.serve(
        &database,
        &["--webhook-allow-private-targets", "--webhook-poll-ms", "20"],
    );
    let ca = certificates.authority.certificate();
    let auth = format!("Authorization: Bearer {ADMIN}");

    let version = |flag: &str| {
        curl(
            &ca,
            &[
                flag,
                "-o",
                "/dev/null",
                "-w",
                "%{http_version} %{http_code}",
                &url(&server, "/healthz"),
            ],
        )
    };
    assert_eq!(version("--http2"), "2 200");
    assert_eq!(version("--http1.1"), "1.1 200");

    // A webhook subscription and a change over HTTPS; the delivery goes out as ever.
    let created = curl(
        &ca,
        &[
            "-H",
            &auth,
            "-H",
            "Content-Type: application/json",
            "-d",
            &format!(
                r#"{{"url": "{}", "events": ["category.created"]}}"#,
                receiver.url
            ),
            &url(&server, "/v1/webhooks"),
        ],
    );
    assert!(created.contains("\"secret\""), "{created}");
    let category = curl(
        &ca,
        &[
            "--http2",
            "-H",
            &auth,
            "-H",
            "Content-Type: application/json",
            "-d",
            r#"{"name": "Dogs"}"#,
            &url(&server, "/v1/categories"),
        ],
    );
    assert!(category.contains("\"name\":\"Dogs\""), "{category}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while receiver.log().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let delivered = receiver.log();
    assert!(
        delivered
            .first()
            .is_some_and(|sent| sent.body.contains("category.created")),
        "{delivered:?}"
    );

    // Metrics and the event stream (over HTTP/2: one stream of the connection).
    let metrics = curl(&ca, &["--http2", &url(&server, "/metrics")]);
    assert!(metrics.contains("petstore_"), "{metrics}");
    let stream = curl(
        &ca,
        &[
            "--http2",
            "-N",
            "--max-time",
            "3",
            "-H",
            &auth,
            "-H",
            "Last-Event-ID: 0",
            &url(&server, "/v1/events/stream"),
        ],
    );
    assert!(stream.contains("category.created"), "{stream}");
}

/// A TLS connection trusting only the test CA: the stream, and the certificate it was shown.
fn connect(
    address: &str,
    ca: &Path,
) -> (
    rustls::StreamOwned<rustls::ClientConnection, TcpStream>,
    Vec<u8>,
) {
    let mut roots = rustls::RootCertStore::empty();
    for certificate in CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(certificate.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = ServerName::try_from("localhost").unwrap();
    let connection = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let mut stream = rustls::StreamOwned::new(connection, TcpStream::connect(address).unwrap());
    stream
        .sock
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    while stream.conn.is_handshaking() {
        stream.conn.complete_io(&mut stream.sock).unwrap();
    }
    let shown = stream.conn.peer_certificates().unwrap()[0].to_vec();
    (stream, shown)
}

/// One request on a kept-alive connection; the status line of its answer.
fn get(stream: &mut (impl Read + Write), path: &str) -> String {
    write!(stream, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    stream.flush().unwrap();
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    status.trim_end().to_owned()
}

#[test]
fn a_renewed_certificate_is_served_after_sighup_by_the_same_process_and_open_connections_go_on() {
    let certificates = Certificates::new();
    let first = der(&std::fs::read(certificates.certificate()).unwrap());
    let database = TestDatabase::new("https-renewal");
    let mut server = certificates.serve(&database, &["--keep-alive-secs", "30"]);
    let ca = certificates.authority.certificate();

    let (mut open, shown) = connect(&server.address, &ca);
    assert_eq!(shown, first);
    assert_eq!(get(&mut open, "/healthz"), "HTTP/1.1 200 OK");

    let renewed = certificates.renew();
    assert_ne!(renewed, first);
    server.signal("HUP");
    // A new connection is shown the renewed certificate once the signal is handled.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, shown) = connect(&server.address, &ca);
        if shown == renewed {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the renewed certificate was never served"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The connection made before goes on with the certificate it shook hands with.
    assert_eq!(get(&mut open, "/healthz"), "HTTP/1.1 200 OK");
    // Same process: it never stopped.
    assert!(server.child.try_wait().unwrap().is_none());

    // A SIGHUP while the files are broken keeps the certificate in use.
    std::fs::write(certificates.certificate(), "not a certificate").unwrap();
    server.signal("HUP");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !server
        .stderr
        .try_iter()
        .any(|line| line.contains("the TLS certificate in use stays"))
    {
        assert!(
            Instant::now() < deadline,
            "the failed reload was never logged"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_, shown) = connect(&server.address, &ca);
    assert_eq!(shown, renewed);
    let (code, _) = server.stop();
    assert_eq!(code, Some(0));
}

#[test]
fn missing_unreadable_or_mismatched_files_stop_the_start_with_one_line_naming_them() {
    let certificates = Certificates::new();
    let other = Certificates::new();
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "-----BEGIN CERTIFICATE-----\nnot base64\n").unwrap();
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "").unwrap();
    let missing = dir.path().join("missing.pem");
    let (cert, key) = (certificates.certificate(), certificates.key());
    // A file that is missing or holds no certificate or key, or a key of another certificate,
    // is a bad setting, refused as the flags are read (exit 2): one line names the file, and
    // nothing is opened.
    for (given_cert, given_key, named, exit) in [
        (&missing, &key, &missing, 2),
        (&cert, &missing, &missing, 2),
        (&garbage, &key, &garbage, 2),
        (&empty, &key, &empty, 2),
        (&cert, &garbage, &garbage, 2),
        (&cert, &other.key(), &other.key(), 2),
    ] {
        let database = dir.path().join("never.db");
        let output = petstore(&database)
            .args(["serve", "--bind", "127.0.0.1:0", "--tls-cert"])
            .arg(given_cert)
            .arg("--tls-key")
            .arg(given_key)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(exit), "{output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|line| line.contains("\"ERROR\"") || line.starts_with("error:"))
            .collect();
        assert_eq!(errors.len(), 1, "{stderr}");
        assert!(
            errors[0].contains(&named.display().to_string()),
            "names {}: {stderr}",
            named.display()
        );
        // The flag at fault is named; a pair that does not match names both, and what to do.
        let flag = if named == given_cert {
            "--tls-cert"
        } else {
            "--tls-key"
        };
        assert!(errors[0].contains(flag), "names {flag}: {stderr}");
        if given_key == &other.key() {
            assert!(
                errors[0].contains("--tls-cert") && errors[0].contains("give the key"),
                "{stderr}"
            );
        }
        assert!(!database.exists(), "nothing opened");
    }
    // One without the other is a usage error.
    let output = petstore(dir.path().join("never.db"))
        .args(["serve", "--tls-cert"])
        .arg(&cert)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--tls-key"));
}

#[test]
fn plain_http_to_the_tls_port_neither_crashes_nor_hangs_the_service() {
    let certificates = Certificates::new();
    let database = TestDatabase::new("https-plain");
    let server = certificates.serve(&database, &[]);
    let ca = certificates.authority.certificate();
    let mut plain = TcpStream::connect(&server.address).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    let started = Instant::now();
    plain
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    // The server ends the connection (after a TLS alert at most): the read ends, in time.
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the connection was left hanging"
    );
    assert!(
        !String::from_utf8_lossy(&answer).contains("200"),
        "no HTTP answer over plain text"
    );
    let (mut stream, _) = connect(&server.address, &ca);
    assert_eq!(get(&mut stream, "/healthz"), "HTTP/1.1 200 OK");
}

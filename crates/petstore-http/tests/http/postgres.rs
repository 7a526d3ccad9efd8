//! The binary on PostgreSQL when the database goes away and comes back: requests get 503 with
//! `Retry-After`, `/readyz` says not ready, and the service recovers by itself, with nothing
//! acknowledged lost. The outage is a TCP proxy between the service and the server that drops
//! every connection and refuses new ones. Runs where `PETSTORE_TEST_POSTGRES_URL` is set.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use crate::binary;
use crate::cluster;

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
    /// While set, connections are accepted and kept, and nothing is forwarded: a server gone
    /// silent behind a network that still answers TCP.
    silent: Arc<AtomicBool>,
}

impl Proxy {
    fn start(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(AtomicBool::new(true));
        let open = Arc::new(Mutex::new(Vec::new()));
        let silent = Arc::new(AtomicBool::new(false));
        let (accepting, tracked, holding) =
            (Arc::clone(&up), Arc::clone(&open), Arc::clone(&silent));
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
                pipe_holding(
                    client.try_clone().unwrap(),
                    server.try_clone().unwrap(),
                    Arc::clone(&holding),
                );
                pipe_holding(server, client, Arc::clone(&holding));
            }
        });
        Proxy {
            port,
            up,
            open,
            silent,
        }
    }

    /// Goes silent: connections stay open, new ones are accepted, nothing is forwarded.
    fn hold(&self) {
        self.silent.store(true, Ordering::SeqCst);
    }

    /// Forwards again, what was held first.
    fn release(&self) {
        self.silent.store(false, Ordering::SeqCst);
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

/// [`pipe`], holding what it reads while `silent` is set.
fn pipe_holding(mut from: TcpStream, mut to: TcpStream, silent: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let mut buffer = [0u8; 16 * 1024];
        while let Ok(n) = from.read(&mut buffer) {
            while silent.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(10));
            }
            if n == 0 || to.write_all(&buffer[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Both);
    });
}

/// Copies what `from` sends to `to`, until either closes.
fn pipe(from: TcpStream, to: TcpStream) {
    pipe_holding(from, to, Arc::default());
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

/// The message a write commits with.
const WRITE_COMMIT: &[u8] = b"statement_timeout = 0; COMMIT";

/// A TCP proxy that, while armed, breaks the connection of each write's `COMMIT`, in turn
/// after passing it on (the server commits; its answer is lost) and before (it never
/// arrives). Everything else passes.
struct CommitCutter {
    port: u16,
    /// Cuts left to make.
    armed: Arc<std::sync::atomic::AtomicUsize>,
    /// Cuts made after passing the `COMMIT` on, and before.
    after: Arc<std::sync::atomic::AtomicUsize>,
    before: Arc<std::sync::atomic::AtomicUsize>,
}

impl CommitCutter {
    fn start(upstream: String) -> Self {
        use std::sync::atomic::AtomicUsize;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cutter = CommitCutter {
            port,
            armed: Arc::new(AtomicUsize::new(0)),
            after: Arc::new(AtomicUsize::new(0)),
            before: Arc::new(AtomicUsize::new(0)),
        };
        let (armed, after, before) = (
            Arc::clone(&cutter.armed),
            Arc::clone(&cutter.after),
            Arc::clone(&cutter.before),
        );
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(mut client) = client else { continue };
                let Ok(mut server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                pipe(server.try_clone().unwrap(), client.try_clone().unwrap());
                let (armed, after, before) =
                    (Arc::clone(&armed), Arc::clone(&after), Arc::clone(&before));
                std::thread::spawn(move || {
                    let mut buffer = [0u8; 16 * 1024];
                    while let Ok(n) = client.read(&mut buffer) {
                        let chunk = &buffer[..n];
                        // A write's COMMIT (a burst's, shared by its writes) comes in one
                        // message with the lifting of its statement_timeout
                        // (PgStore::commit); a read's is a bare COMMIT.
                        // (The statements before it are prepared, and do not show their text
                        // once a connection has run them.)
                        let commit = chunk.windows(WRITE_COMMIT.len()).any(|w| w == WRITE_COMMIT);
                        let cut = commit
                            && armed
                                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                                    left.checked_sub(1)
                                })
                                .is_ok();
                        if cut {
                            let made = after.load(Ordering::SeqCst) + before.load(Ordering::SeqCst);
                            if made % 2 == 0 {
                                let _ = server.write_all(chunk);
                                after.fetch_add(1, Ordering::SeqCst);
                            } else {
                                before.fetch_add(1, Ordering::SeqCst);
                            }
                            let _ = server.shutdown(Shutdown::Both);
                            let _ = client.shutdown(Shutdown::Both);
                            break;
                        }
                        if n == 0 || server.write_all(chunk).is_err() {
                            break;
                        }
                    }
                    let _ = server.shutdown(Shutdown::Both);
                });
            }
        });
        cutter
    }
}

/// The connection breaks while writes commit: a write is never answered as failed if it
/// happened. The service asks the server what became of each commit whose answer it lost
/// (`pg_xact_status`), so each write is answered as it turned out: 201 if it committed, 503
/// `unavailable` if not, and `outcome_unknown` only if the server cannot say (never here,
/// where it can).
#[test]
fn a_connection_broken_during_commit_answers_each_write_as_it_turned_out() {
    let Some(database) = ScratchPostgres::create() else {
        return;
    };
    let (upstream, _) = through_proxy(database.url(), 0);
    let cutter = CommitCutter::start(upstream);
    let (_, url) = through_proxy(database.url(), cutter.port);
    // In the clear: the proxy reads the protocol to find each write's COMMIT.
    let url = format!("{url}?sslmode=disable");
    let server = serve_with(&url, Some(ADMIN), &["--rate-limit", "1000000"]);
    let dogs = server.create_category(ADMIN, "Dogs");
    let call = |method: &str, path: &str, body: Option<&str>| {
        binary::send_to(&server.address, method, path, ADMIN, &[], body).expect("an answer")
    };
    // The writes of a round may share one burst, and so one COMMIT: enough rounds that at
    // least five commits are cut each way.
    const ROUNDS: usize = 12;
    const CUTS_EACH_WAY: usize = 5;
    const WRITES: usize = 4;
    let mut answers = std::collections::BTreeMap::<String, usize>::new();
    for round in 0..ROUNDS {
        let pets: Vec<i64> = (0..WRITES)
            .map(|n| {
                let (status, pet) = call(
                    "POST",
                    "/v1/pets",
                    Some(&format!(
                        r#"{{"name": "Pet {round}-{n}", "categoryId": {dogs}}}"#
                    )),
                );
                assert_eq!(status, 201, "{pet}");
                let id = serde_json::from_str::<serde_json::Value>(&pet).unwrap()["id"]
                    .as_i64()
                    .unwrap();
                let (status, _) = call(
                    "PATCH",
                    &format!("/v1/inventory/{id}"),
                    Some(r#"{"quantity": 10}"#),
                );
                assert_eq!(status, 200);
                id
            })
            .collect();
        cutter.armed.store(2, Ordering::SeqCst);
        let told: Vec<(u16, String)> = std::thread::scope(|scope| {
            let orders: Vec<_> = pets
                .iter()
                .map(|pet| {
                    let body = format!(r#"{{"petId": {pet}, "quantity": 1}}"#);
                    let call = &call;
                    scope.spawn(move || call("POST", "/v1/store/orders", Some(&body)))
                })
                .collect();
            orders.into_iter().map(|o| o.join().unwrap()).collect()
        });
        cutter.armed.store(0, Ordering::SeqCst);
        for (pet, (status, body)) in pets.iter().zip(&told) {
            let (_, item) = call("GET", &format!("/v1/inventory/{pet}"), None);
            let stock = serde_json::from_str::<serde_json::Value>(&item).unwrap()["quantity"]
                .as_i64()
                .unwrap();
            let code = serde_json::from_str::<serde_json::Value>(body)
                .ok()
                .and_then(|b| b["code"].as_str().map(str::to_owned))
                .unwrap_or_default();
            match (*status, code.as_str()) {
                (201, _) => assert_eq!(stock, 9, "acknowledged, so made: {body}"),
                (503, "unavailable") => assert_eq!(stock, 10, "answered as failed, so not made"),
                _ => panic!("pet {pet}: {status} {body}"),
            }
            *answers.entry(format!("{status} {code}")).or_default() += 1;
        }
    }
    let (after, before) = (
        cutter.after.load(Ordering::SeqCst),
        cutter.before.load(Ordering::SeqCst),
    );
    assert!(
        after >= CUTS_EACH_WAY && before >= CUTS_EACH_WAY,
        "cut {after} after and {before} before"
    );
    assert!(answers.contains_key("503 unavailable"), "{answers:?}");
}

/// TLS to the database: a cluster that takes TLS connections only (`hostssl`), with a server
/// certificate from a CA made here. The service serves over `sslmode=verify-full` (and
/// `verify-ca`, `require`) with that CA, and refuses to start, naming TLS and the host, with
/// another CA, or when the server offers no TLS.
#[test]
fn tls_to_the_database_is_verified_and_a_wrong_ca_stops_the_start() {
    use cluster::Authority;
    let Some((cluster, authority)) = tls_cluster(false) else {
        return;
    };
    cluster.hba("hostssl all all 127.0.0.1/32 trust\n");
    cluster.start();
    let url = |ca: &std::path::Path, mode: &str| {
        format!(
            "postgres://postgres@localhost:{}/postgres?sslmode={mode}&sslrootcert={}",
            cluster.port,
            ca.display()
        )
    };
    let ca = authority.certificate();
    for (n, mode) in ["verify-full", "verify-ca", "require"].iter().enumerate() {
        let server = serve_with(url(&ca, mode), Some(ADMIN), &[]);
        server.create_category(ADMIN, &format!("Over TLS {n}"));
        let listed = server.get("/v1/categories", ADMIN);
        assert!(
            listed.contains(&format!("Over TLS {n}")),
            "{mode}: {listed}"
        );
    }

    let stranger = Authority::new(cluster.dir(), "stranger-ca");
    let said = refused_start(url(&stranger.certificate(), "verify-full"));
    assert!(said.contains("TLS") && said.contains("localhost"), "{said}");

    cluster.stop();
    cluster.configure("ssl = off\n");
    cluster.hba("host all all 127.0.0.1/32 trust\n");
    cluster.start();
    let said = refused_start(url(&ca, "verify-full"));
    assert!(said.contains("TLS") && said.contains("localhost"), "{said}");
}

/// A server that authenticates clients by certificate (`hostssl … cert`): the service
/// connects with the certificate and key named on the URL (`sslcert`, `sslkey`), and without
/// them refuses to start, naming TLS and the host.
#[test]
fn a_client_certificate_on_the_url_is_what_the_database_authenticates() {
    let Some((cluster, authority)) = tls_cluster(true) else {
        return;
    };
    let ca = authority.certificate();
    // `cert`: the client's certificate must be signed by the CA and name the user.
    cluster.hba("hostssl all all 127.0.0.1/32 cert\n");
    cluster.start();

    // The client's key belongs to the user running the service, readable by it alone, as
    // libpq requires.
    let (client_certificate, client_key) = authority.sign_client("postgres");
    let client_dir = tempfile::tempdir().unwrap();
    let client_certificate_path = client_dir.path().join("client.pem");
    let client_key_path = client_dir.path().join("client.key");
    std::fs::write(&client_certificate_path, client_certificate).unwrap();
    std::fs::write(&client_key_path, client_key).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&client_key_path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let url = format!(
        "postgres://postgres@localhost:{}/postgres?sslmode=verify-full&sslrootcert={}",
        cluster.port,
        ca.display()
    );
    let with_certificate = format!(
        "{url}&sslcert={}&sslkey={}",
        client_certificate_path.display(),
        client_key_path.display()
    );
    let server = serve_with(&with_certificate, Some(ADMIN), &[]);
    server.create_category(ADMIN, "By certificate");
    let listed = server.get("/v1/categories", ADMIN);
    assert!(listed.contains("By certificate"), "{listed}");
    drop(server);

    // Without one (and with no ~/.postgresql/postgresql.crt to fall back on), the server
    // turns the connection away and the start fails at once.
    let said = refused_start(format!(
        "{url}&sslcert={0}/none.crt&sslkey={0}/none.key",
        client_dir.path().display()
    ));
    assert!(
        said.contains("certificate") && said.contains("localhost"),
        "{said}"
    );
}

/// A cluster, not yet started, that takes TLS with a server certificate for `localhost` from
/// a CA made here (and asks clients for certificates from that CA, if `client_certificates`),
/// and the CA; `None` where no cluster can be made.
fn tls_cluster(client_certificates: bool) -> Option<(cluster::Cluster, cluster::Authority)> {
    let cluster = cluster::Cluster::init()?;
    let authority = cluster::Authority::new(cluster.dir(), "petstore-test-ca");
    let (certificate, key) = authority.sign_server();
    let certificate = cluster.private_file("server.pem", &certificate);
    let key = cluster.private_file("server.key", &key);
    let mut settings = format!(
        "ssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\n",
        certificate.display(),
        key.display()
    );
    if client_certificates {
        let ca = std::fs::read(authority.certificate()).unwrap();
        let ca = cluster.private_file("ca.pem", &ca);
        settings.push_str(&format!("ssl_ca_file = '{}'\n", ca.display()));
    }
    cluster.configure(&settings);
    Some((cluster, authority))
}

/// What `petstore serve` on `database` says when it fails to start, which it must within
/// 15 s; one that serves instead is stopped and fails the test.
fn refused_start(database: String) -> String {
    let mut child = binary::petstore(database)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(15) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the service started, or kept trying for 15 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success(), "the start fails");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The database goes silent: connections stay open and nothing comes back, as with a dead
/// server behind a network that still answers TCP. Every request is answered within the
/// database deadline (503: `unavailable` for a read; a write may be `outcome_unknown`, since
/// it may commit when the network returns), `/readyz` within a second, and the service
/// serves again within seconds of the database answering again.
#[test]
fn a_database_gone_silent_answers_every_request_in_time_and_recovers() {
    let Some(database) = ScratchPostgres::create() else {
        return;
    };
    let (upstream, _) = through_proxy(database.url(), 0);
    let proxy = Proxy::start(upstream);
    let (_, url) = through_proxy(database.url(), proxy.port);
    let deadline = Duration::from_secs(3);
    let server = serve_with(
        &url,
        Some(ADMIN),
        &["--db-timeout-ms", "3000", "--rate-limit", "1000000"],
    );
    server.create_category(ADMIN, "Before");

    proxy.hold();
    let answers: Vec<(bool, u16, String, Duration)> = std::thread::scope(|scope| {
        let calls: Vec<_> = (0..8)
            .map(|n| {
                let address = server.address.as_str();
                scope.spawn(move || {
                    let writes = n % 2 == 0;
                    let started = Instant::now();
                    let (status, body) = if writes {
                        let body = format!(r#"{{"name": "During {n}"}}"#);
                        binary::send_to(address, "POST", "/v1/categories", ADMIN, &[], Some(&body))
                    } else {
                        binary::send_to(
                            address,
                            "GET",
                            &format!("/v1/pets?limit={}", n + 1),
                            ADMIN,
                            &[],
                            None,
                        )
                    }
                    .expect("an answer");
                    (writes, status, body, started.elapsed())
                })
            })
            .collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let started = Instant::now();
    let ready = server.get("/readyz", ADMIN);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "/readyz in time"
    );
    assert_eq!(status(&ready), 503, "{ready}");
    for (writes, status, body, took) in &answers {
        assert!(
            *took < deadline + Duration::from_millis(1500),
            "answered after {took:?}"
        );
        assert_eq!(*status, 503, "{body}");
        let code = serde_json::from_str::<serde_json::Value>(body).unwrap()["code"].clone();
        if *writes {
            assert!(code == "outcome_unknown" || code == "unavailable", "{body}");
        } else {
            assert_eq!(code, "unavailable", "{body}");
        }
    }

    proxy.release();
    let released = Instant::now();
    loop {
        let listed = server.get("/v1/categories", ADMIN);
        if status(&listed) == 200 && status(&server.get("/readyz", ADMIN)) == 200 {
            break;
        }
        assert!(
            released.elapsed() < Duration::from_secs(10),
            "never back: {listed}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    server.create_category(ADMIN, "After");
}

/// What one client was told during the failover.
#[derive(Default)]
struct Failover {
    /// Categories acknowledged: name, when, by which node.
    made: Vec<(String, Instant, usize)>,
    /// Categories answered as not made.
    refused: Vec<String>,
    /// Orders acknowledged, by id.
    orders: Vec<i64>,
    /// Anything but 201, 503 `unavailable` or 503 `outcome_unknown`.
    wrong: Vec<String>,
}

/// A primary with a synchronous streaming standby, two nodes on a multi-host URL under write
/// load: `kill -9` the primary, promote the standby. The nodes take writes again within 10 s of
/// the promotion by themselves, every write acknowledged before or after is on the new
/// primary, none answered as refused is, and no answer is a 500.
#[test]
fn the_nodes_follow_a_promoted_standby_and_lose_no_acknowledged_write() {
    use cluster::Cluster;
    use std::sync::atomic::AtomicBool;
    let Some(primary) = Cluster::init() else {
        return;
    };
    primary.start();
    let standby = Cluster::standby_of(&primary);
    standby.start();
    // Commits wait for the standby from now on: one acknowledged is on both.
    primary.configure("synchronous_standby_names = '*'\n");
    primary.reload();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        use diesel::prelude::*;
        let mut conn = diesel::PgConnection::establish(&primary.url()).unwrap();
        #[derive(QueryableByName)]
        struct Count {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        let sync: Count = diesel::sql_query(
            "SELECT count(*) AS n FROM pg_stat_replication WHERE sync_state = 'sync'",
        )
        .get_result(&mut conn)
        .unwrap();
        if sync.n == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the standby never became synchronous"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let url = format!(
        "postgres://postgres@127.0.0.1:{},127.0.0.1:{}/postgres?target_session_attrs=read-write&sslmode=disable",
        primary.port, standby.port
    );
    let nodes = [
        serve_with(&url, Some(ADMIN), &["--rate-limit", "1000000"]),
        serve_with(&url, Some(ADMIN), &["--rate-limit", "1000000"]),
    ];
    let dogs = nodes[0].create_category(ADMIN, "Dogs");
    let pet = {
        let (status, body) = binary::send_to(
            &nodes[0].address,
            "POST",
            "/v1/pets",
            ADMIN,
            &[],
            Some(&format!(r#"{{"name": "Rex", "categoryId": {dogs}}}"#)),
        )
        .unwrap();
        assert_eq!(status, 201, "{body}");
        let pet = serde_json::from_str::<serde_json::Value>(&body).unwrap()["id"]
            .as_i64()
            .unwrap();
        let (status, _) = binary::send_to(
            &nodes[1].address,
            "PATCH",
            &format!("/v1/inventory/{pet}"),
            ADMIN,
            &[],
            Some(r#"{"quantity": 1000000}"#),
        )
        .unwrap();
        assert_eq!(status, 200);
        pet
    };

    let writing = AtomicBool::new(true);
    let addresses = [nodes[0].address.clone(), nodes[1].address.clone()];
    let (told, promoted) = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..4)
            .map(|client| {
                let (writing, addresses) = (&writing, &addresses);
                scope.spawn(move || {
                    let mut told = Failover::default();
                    for n in 0_usize.. {
                        if !writing.load(Ordering::Relaxed) {
                            break;
                        }
                        let address = &addresses[(client + n) % 2];
                        let (path, body) = if n % 2 == 0 {
                            ("/v1/categories", format!(r#"{{"name": "C{client}-{n}"}}"#))
                        } else {
                            (
                                "/v1/store/orders",
                                format!(r#"{{"petId": {pet}, "quantity": 1}}"#),
                            )
                        };
                        let Some((status, reply)) =
                            binary::send_to(address, "POST", path, ADMIN, &[], Some(&body))
                        else {
                            told.wrong.push(format!("no answer to {path}"));
                            continue;
                        };
                        let value: serde_json::Value =
                            serde_json::from_str(&reply).unwrap_or_default();
                        match (status, value["code"].as_str(), n % 2 == 0) {
                            (201, _, true) => told.made.push((
                                format!("C{client}-{n}"),
                                Instant::now(),
                                (client + n) % 2,
                            )),
                            (201, _, false) => told.orders.push(value["id"].as_i64().unwrap()),
                            (503, Some("unavailable"), true) => {
                                told.refused.push(format!("C{client}-{n}"))
                            }
                            (503, Some("unavailable" | "outcome_unknown"), _) => {
                                std::thread::sleep(Duration::from_millis(20));
                            }
                            _ => told.wrong.push(format!("{status} {reply}")),
                        }
                    }
                    told
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(1500));
        primary.kill();
        std::thread::sleep(Duration::from_millis(1000));
        standby.promote();
        let promoted = Instant::now();
        std::thread::sleep(Duration::from_secs(10));
        writing.store(false, Ordering::Relaxed);
        let told: Vec<Failover> = clients.into_iter().map(|c| c.join().unwrap()).collect();
        (told, promoted)
    });

    let wrong: Vec<&String> = told.iter().flat_map(|t| &t.wrong).collect();
    assert!(wrong.is_empty(), "no 500, no other answer: {wrong:?}");
    for node in 0..addresses.len() {
        let first_after = told
            .iter()
            .flat_map(|t| &t.made)
            .filter(|(_, at, by)| *at > promoted && *by == node)
            .map(|(_, at, _)| *at - promoted)
            .min();
        assert!(
            first_after.is_some_and(|took| took < Duration::from_secs(10)),
            "node {node} took writes again within 10 s of the promotion: {first_after:?}"
        );
    }
    let listed = |path: &str| {
        let mut items = Vec::new();
        let mut cursor = String::new();
        loop {
            let (status, page) = binary::send_to(
                &nodes[0].address,
                "GET",
                &format!("{path}?limit=100{cursor}"),
                ADMIN,
                &[],
                None,
            )
            .unwrap();
            assert_eq!(status, 200, "{page}");
            let page: Vec<serde_json::Value> = serde_json::from_str(&page).unwrap();
            let last = page.last().map(|item| item["id"].as_i64().unwrap());
            let full = page.len() == 100;
            items.extend(page);
            match last {
                Some(last) if full => cursor = format!("&cursor=k{last:x}"),
                _ => return items,
            }
        }
    };
    let categories: std::collections::BTreeSet<String> = listed("/v1/categories")
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    let orders: std::collections::BTreeSet<i64> = listed("/v1/store/orders")
        .iter()
        .map(|o| o["id"].as_i64().unwrap())
        .collect();
    for told in &told {
        for (name, ..) in &told.made {
            assert!(categories.contains(name), "{name} was acknowledged");
        }
        for name in &told.refused {
            assert!(!categories.contains(name), "{name} was answered as refused");
        }
        for id in &told.orders {
            assert!(orders.contains(id), "order {id} was acknowledged");
        }
    }
    let before_promotion = told
        .iter()
        .flat_map(|t| &t.made)
        .filter(|(_, at, _)| *at < promoted)
        .count();
    assert!(
        before_promotion > 0 && !orders.is_empty(),
        "writes before the crash too"
    );
}

/// A server that stops taking writes (here: its database made read-only for new sessions,
/// as a standby or a primary being demoted is): a connection to it is dropped from the pool,
/// each write is answered 503 with `Retry-After` (never 500) while no writable server is
/// found, and writes go through again once one is.
#[test]
fn a_server_that_stops_taking_writes_is_503_until_one_does() {
    use diesel::connection::SimpleConnection;
    use diesel::prelude::*;
    let Some(database) = ScratchPostgres::create() else {
        return;
    };
    let name = database.url().rsplit('/').next().unwrap().to_owned();
    let server = serve_with(database.url(), Some(ADMIN), &["--db-wait-ms", "500"]);
    server.create_category(ADMIN, "Before");
    let admin_url = std::env::var("PETSTORE_TEST_POSTGRES_URL").unwrap();
    let mut admin = diesel::PgConnection::establish(&admin_url).unwrap();
    let read_only = |on: bool, admin: &mut diesel::PgConnection| {
        #[derive(QueryableByName)]
        struct Pid {
            #[diesel(sql_type = diesel::sql_types::Integer)]
            pid: i32,
        }
        let setting = if on {
            "SET default_transaction_read_only = on"
        } else {
            "RESET default_transaction_read_only"
        };
        admin
            .batch_execute(&format!("ALTER DATABASE \"{name}\" {setting}"))
            .unwrap();
        let sessions = format!("SELECT pid FROM pg_stat_activity WHERE datname = '{name}'");
        let old: Vec<i32> = diesel::sql_query(&sessions)
            .load::<Pid>(admin)
            .unwrap()
            .into_iter()
            .map(|p| p.pid)
            .collect();
        for pid in &old {
            admin
                .batch_execute(&format!("SELECT pg_terminate_backend({pid})"))
                .unwrap();
        }
        // Termination is a signal: wait until the old sessions are gone.
        let deadline = Instant::now() + Duration::from_secs(10);
        while diesel::sql_query(&sessions)
            .load::<Pid>(admin)
            .unwrap()
            .iter()
            .any(|p| old.contains(&p.pid))
        {
            assert!(Instant::now() < deadline, "sessions never ended");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    read_only(true, &mut admin);
    for n in 0..5 {
        let write = server.post(
            "/v1/categories",
            ADMIN,
            &format!(r#"{{"name": "During {n}"}}"#),
        );
        assert_eq!(status(&write), 503, "{write}");
        assert!(write.contains(r#""code":"unavailable""#), "{write}");
        assert!(write.to_lowercase().contains("retry-after: "), "{write}");
    }
    assert_eq!(status(&server.get("/readyz", ADMIN)), 503);

    read_only(false, &mut admin);
    let back = Instant::now();
    loop {
        let write = server.post("/v1/categories", ADMIN, r#"{"name": "After"}"#);
        if status(&write) == 201 {
            break;
        }
        assert_eq!(status(&write), 503, "{write}");
        assert!(
            back.elapsed() < Duration::from_secs(10),
            "never writable again: {write}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let listed = server.get("/v1/categories", ADMIN);
    assert!(!listed.contains("During"), "{listed}");
}

/// Nothing the service sends draws a warning or an error into the database's log, so an
/// operator reading it sees what needs reading. A read transaction used to begin with a
/// `COMMIT` outside any transaction, and the server logged "there is no transaction in
/// progress" for each: the delivery loop's reads alone made two such lines a second on every
/// node.
#[test]
fn the_database_log_stays_free_of_warnings_while_the_service_works() {
    let Some(cluster) = cluster::Cluster::init() else {
        return;
    };
    cluster.start();
    let server = serve_with(
        format!(
            "postgres://postgres@127.0.0.1:{}/postgres?sslmode=disable",
            cluster.port
        ),
        Some(ADMIN),
        &[],
    );
    // Its id as given: a PostgreSQL sequence may skip one (a write run again after a
    // conflict keeps the value it took).
    let dogs = server.create_category(ADMIN, "Dogs");
    let made = server.post(
        "/v1/pets",
        ADMIN,
        &format!(r#"{{"name": "Rex", "categoryId": {dogs}}}"#),
    );
    assert_eq!(status(&made), 201, "{made}");
    let feed = server.get("/v1/events?limit=1", ADMIN);
    assert!(feed.contains("category.created"), "{feed}");
    // The delivery loop reads in a transaction of its own every half second.
    std::thread::sleep(Duration::from_millis(1200));
    drop(server);
    let log = cluster.log();
    let drawn: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("WARNING") || line.contains("ERROR"))
        .collect();
    assert!(drawn.is_empty(), "{drawn:#?}");
}

/// A statement stuck behind another session's lock is cancelled by the server before the
/// database deadline (`statement_timeout`), not left waiting and holding its own locks: the
/// request is answered in time as not done (503 `unavailable`), and the write never happens,
/// even once the lock is released.
#[test]
fn a_statement_stuck_on_a_lock_is_cancelled_at_the_deadline() {
    use diesel::connection::SimpleConnection;
    use diesel::prelude::*;
    let Some(database) = ScratchPostgres::create() else {
        return;
    };
    let server = serve_with(
        database.url(),
        Some(ADMIN),
        &["--db-timeout-ms", "1000", "--db-wait-ms", "500"],
    );
    let (_, pet) = server.first_pet_with_stock(ADMIN, 5);

    let mut holder = diesel::PgConnection::establish(database.url()).unwrap();
    holder
        .batch_execute(&format!(
            "BEGIN; SELECT id FROM pets WHERE id = {pet} FOR UPDATE;"
        ))
        .unwrap();
    let started = Instant::now();
    let order = server.post(
        "/v1/store/orders",
        ADMIN,
        &format!(r#"{{"petId": {pet}, "quantity": 1}}"#),
    );
    let took = started.elapsed();
    assert_eq!(status(&order), 503, "{order}");
    assert!(
        order.contains(r#""code":"unavailable""#),
        "the server cancelled it, so it did not happen: {order}"
    );
    assert!(
        took < Duration::from_millis(2500),
        "answered after {took:?}"
    );
    // Held past the deadline, then released: a statement merely abandoned would go on now.
    std::thread::sleep(Duration::from_millis(1500));
    holder.batch_execute("COMMIT").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let stock = server.get(&format!("/v1/inventory/{pet}"), ADMIN);
    assert!(
        stock.contains(r#""quantity":5"#),
        "the order never happened: {stock}"
    );
    let orders = server.get("/v1/store/orders", ADMIN);
    assert!(orders.ends_with("[]"), "{orders}");
}

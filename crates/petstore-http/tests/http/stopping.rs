//! Stopping and signalling the binary as an operator's tools do: a clean stop leaves a database
//! file complete by itself, and a SIGHUP at any moment of the start (a certificate renewal
//! hook's `systemctl reload`) leaves the service serving.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use diesel::{Connection, RunQueryDsl, SqliteConnection};

use crate::binary::{category_names, petstore, send_to, serve};

const ADMIN: &str = "stopping-admin-0123456789abcdef0123456789";

/// People copy a stopped service's database file and nothing else. After SIGTERM or SIGINT,
/// that copy holds every write the service acknowledged, its admin key included, and passes
/// `petstore check`.
#[test]
fn after_a_clean_stop_the_database_file_alone_holds_every_acknowledged_write() {
    for signal in ["TERM", "INT"] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("shop.db");
        let mut server = serve(&file, Some(ADMIN));
        let mut acknowledged = Vec::new();
        for n in 0..40 {
            let name = format!("Aisle {n}");
            server.create_category(ADMIN, &name);
            acknowledged.push(name);
        }
        server.signal(signal);
        let (code, _) = server.exited();
        assert_eq!(code, Some(0), "SIG{signal} stops cleanly");

        let copied = tempfile::tempdir().unwrap();
        let copy = copied.path().join("shop.db");
        std::fs::copy(&file, &copy).unwrap();
        assert_eq!(category_names(&copy), acknowledged, "after SIG{signal}");
        let check = petstore(&copy).arg("check").output().unwrap();
        assert!(check.status.success(), "after SIG{signal}: {check:?}");
        let keys = petstore(&copy).args(["keys", "list"]).output().unwrap();
        let listed = String::from_utf8_lossy(&keys.stdout);
        assert!(
            keys.status.success() && listed.contains("admin"),
            "the bootstrap admin key is in the copy after SIG{signal}: {keys:?}"
        );
    }
}

/// A small pseudo-random sequence (SplitMix64), seeded from the clock and printed, so that a
/// failing run can be told apart from the next.
struct Delays(u64);

impl Delays {
    fn next_ms(&mut self, below: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % below
    }
}

/// `petstore serve` on the SQLite file `database` with `flags`, its stderr piped, returned
/// once it listens for its signals (within 5 s of the exec).
fn serve_listening_for_signals(database: &std::path::Path, flags: &[&str]) -> std::process::Child {
    let child = petstore(database)
        .args(["serve", "--workers", "1", "--bind", "127.0.0.1:0"])
        .args(flags)
        .env("PETSTORE_BOOTSTRAP_ADMIN_KEY", ADMIN)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !catches_sighup(child.id()) {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "SIGHUP not caught 5 s after the exec"
        );
        std::thread::yield_now();
    }
    child
}

/// Whether the process `pid` catches SIGHUP (its bit in `SigCgt` of `/proc/<pid>/status`).
fn catches_sighup(pid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status
        .lines()
        .find_map(|line| line.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & 1 != 0)
}

/// A SIGHUP at any moment of the first second of a start (opening and migrating a new
/// database, making the first admin key, binding) is taken as a reload: the service goes on
/// and serves. The process catches SIGHUP before any of that, as its first act: the delays
/// count from then, a few milliseconds after the `exec` (the loader and the runtime's set-up
/// come first; the unit file's `RestartForceExitStatus=SIGHUP` covers those).
#[test]
fn a_sighup_while_the_service_starts_leaves_it_serving() {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    println!("delays seeded with {seed}");
    let mut delays = Delays(seed);
    // The first run sends it at once, the others at random points of the first second.
    let mut sent_after = vec![0];
    sent_after.extend((1..16).map(|_| delays.next_ms(1000)));
    for delay in sent_after {
        let dir = tempfile::tempdir().unwrap();
        let database = dir.path().join("shop.db");
        let mut child = serve_listening_for_signals(&database, &[]);
        std::thread::sleep(Duration::from_millis(delay));
        let hung_up = std::process::Command::new("kill")
            .args(["-HUP", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(hung_up.success(), "kill -HUP after {delay} ms");

        let (address_tx, address) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Ok(event) = serde_json::from_str::<serde_json::Value>(&line)
                    && event["fields"]["message"] == "petstore listening"
                {
                    let _ = address_tx.send(event["fields"]["address"].as_str().map(str::to_owned));
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        let listening = loop {
            if let Ok(Some(address)) = address.recv_timeout(Duration::from_millis(50)) {
                break address;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!("a SIGHUP {delay} ms after the start ended the process: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "not listening 30 s after a SIGHUP at {delay} ms"
            );
        };
        let answer = send_to(&listening, "GET", "/v1/categories", ADMIN, &[], None);
        assert_eq!(
            answer.map(|(status, _)| status),
            Some(200),
            "serving after a SIGHUP at {delay} ms"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "alive after a SIGHUP at {delay} ms"
        );
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let status = child.wait().unwrap();
        assert_eq!(
            status.code(),
            Some(0),
            "SIGTERM after a SIGHUP at {delay} ms"
        );
    }
}

/// A SIGTERM while the database is slow to open (here another process holds the new, empty
/// file locked, and the start would wait a minute for it) ends the start at once, with exit
/// 0, and leaves the file as it was.
#[test]
fn a_sigterm_during_a_slow_database_open_ends_the_start_at_once() {
    use diesel::connection::SimpleConnection;
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("shop.db");
    let mut holder = SqliteConnection::establish(database.to_str().unwrap()).unwrap();
    holder.batch_execute("BEGIN EXCLUSIVE;").unwrap();
    let mut child = serve_listening_for_signals(&database, &["--db-wait-ms", "60000"]);
    // Well into the wait for the lock.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the start did not wait for the lock"
    );
    let terminated = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(terminated.success());
    let sent = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(10),
            "still starting 10 s after SIGTERM (the lock's wait is 60 s)"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0), "{status}");
    let mut said = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut said).unwrap();
    assert!(
        said.contains("stopped while the database was being opened"),
        "{said}"
    );
    holder.batch_execute("COMMIT").unwrap();
    #[derive(diesel::QueryableByName)]
    struct Named {
        #[diesel(sql_type = diesel::sql_types::Text)]
        name: String,
    }
    let tables: Vec<String> = diesel::sql_query("SELECT name FROM sqlite_master ORDER BY name")
        .load::<Named>(&mut holder)
        .unwrap()
        .into_iter()
        .map(|row| row.name)
        .collect();
    assert!(tables.is_empty(), "the start changed the file: {tables:?}");
}

//! Finishing a rolling upgrade (`petstore migrate --finish`, docs/deployment.md): refused while a
//! node that knows fewer migrations than this version has been seen lately, on SQLite and on
//! PostgreSQL (and `--dry-run` names it, changing nothing); a serving node of this version does
//! not hold it up, and takes its heartbeat away when it stops.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection, RunQueryDsl, SqliteConnection};
use petstore_store::testing::ScratchPostgres;

use crate::binary::{petstore, serve, serve_command};

const ADMIN: &str = "upgrade-admin-0123456789abcdef0123456789ab";

/// A database of either backend, reached by SQL as an operator's `psql` or `sqlite3` would.
enum Database {
    Sqlite(std::path::PathBuf),
    Postgres(ScratchPostgres),
}

impl Database {
    fn arg(&self) -> String {
        match self {
            Database::Sqlite(file) => file.display().to_string(),
            Database::Postgres(database) => database.url().to_owned(),
        }
    }

    fn execute(&self, sql: &str) {
        match self {
            Database::Sqlite(file) => SqliteConnection::establish(file.to_str().unwrap())
                .unwrap()
                .batch_execute(sql)
                .unwrap(),
            Database::Postgres(database) => PgConnection::establish(database.url())
                .unwrap()
                .batch_execute(sql)
                .unwrap(),
        }
    }

    /// The first column of `sql`'s rows, as text.
    fn texts(&self, sql: &str) -> Vec<String> {
        #[derive(diesel::QueryableByName)]
        struct Text {
            #[diesel(sql_type = diesel::sql_types::Text)]
            text: String,
        }
        let rows: Vec<Text> = match self {
            Database::Sqlite(file) => diesel::sql_query(sql)
                .load(&mut SqliteConnection::establish(file.to_str().unwrap()).unwrap())
                .unwrap(),
            Database::Postgres(database) => diesel::sql_query(sql)
                .load(&mut PgConnection::establish(database.url()).unwrap())
                .unwrap(),
        };
        rows.into_iter().map(|row| row.text).collect()
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// `petstore migrate` with `flags`: its exit code and what it said.
fn migrate(database: &Database, flags: &[&str]) -> (Option<i32>, String) {
    let output = petstore(database.arg())
        .arg("migrate")
        .args(flags)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code(), said)
}

fn finishing_waits_for_older_nodes(database: &Database) {
    let (code, said) = migrate(database, &[]);
    assert_eq!(code, Some(0), "{said}");
    let applied =
        || database.texts("SELECT version AS text FROM __diesel_schema_migrations ORDER BY 1");
    let before = applied();

    // A node of this version serves and beats: it does not hold the finish up.
    let server = serve(database.arg(), Some(ADMIN));
    let deadline = Instant::now() + Duration::from_secs(10);
    while database
        .texts("SELECT node AS text FROM node_heartbeats")
        .is_empty()
    {
        assert!(
            Instant::now() < deadline,
            "no heartbeat 10 s after the start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (code, said) = migrate(database, &["--finish"]);
    assert_eq!(code, Some(0), "a node of this version: {said}");

    // A node that knows only the first migration, seen just now.
    database.execute(&format!(
        "INSERT INTO node_heartbeats (node, schema_version, seen_at) \
         VALUES ('old-node', '20261122000001', {})",
        unix_now()
    ));
    // The dry run names it, and what would run, and changes nothing.
    let dry = petstore(database.arg())
        .args(["migrate", "--finish", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(dry.status.code(), Some(0), "{dry:?}");
    let plan = String::from_utf8(dry.stdout).unwrap();
    assert!(
        plan.contains("would run: nothing")
            && plan.contains("would wait for: old-node (knows migrations up to 20261122000001"),
        "{plan}"
    );
    assert_eq!(applied(), before, "the dry run changed the migrations");
    let (code, said) = migrate(database, &["--finish"]);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("old-node (knows migrations up to 20261122000001")
            && said.contains("Nothing was changed"),
        "{said}"
    );
    assert_eq!(applied(), before, "the refusal changed the migrations");
    let (code, said) = migrate(database, &["--finish", "--force"]);
    assert_eq!(code, Some(0), "--force: {said}");

    // The same node silent for a minute is gone.
    database.execute(&format!(
        "UPDATE node_heartbeats SET seen_at = {} WHERE node = 'old-node'",
        unix_now() - 60
    ));
    let (code, said) = migrate(database, &["--finish"]);
    assert_eq!(code, Some(0), "a node silent for 60 s: {said}");

    let (code, _) = server.terminate();
    assert_eq!(code, Some(0));
    assert_eq!(
        database.texts("SELECT node AS text FROM node_heartbeats"),
        ["old-node"],
        "a node that stops takes its heartbeat away"
    );

    // A newer version has begun its own upgrade (an additive migration this binary does not
    // know): finishing it is that version's, and this one refuses rather than say
    // "up to date", with and without --dry-run.
    database.execute("INSERT INTO __diesel_schema_migrations (version) VALUES ('20991231000001')");
    let before = applied();
    for flags in [
        &["--finish"][..],
        &["--finish", "--dry-run"],
        &["--finish", "--force"],
    ] {
        let (code, said) = migrate(database, flags);
        assert_eq!(code, Some(1), "{flags:?}: {said}");
        assert!(
            said.contains("being upgraded to a newer version of petstore")
                && said.contains("20991231000001")
                && said.contains("Nothing was changed"),
            "{flags:?}: {said}"
        );
        assert!(!said.contains("up to date"), "{flags:?}: {said}");
    }
    assert_eq!(applied(), before, "the refusal changed the migrations");
}

#[test]
fn finishing_an_upgrade_waits_for_older_nodes_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    finishing_waits_for_older_nodes(&Database::Sqlite(dir.path().join("shop.db")));
}

#[test]
fn finishing_an_upgrade_waits_for_older_nodes_on_postgres() {
    let Some(database) = ScratchPostgres::create() else {
        return;
    };
    finishing_waits_for_older_nodes(&Database::Postgres(database));
}

/// The node name `server` gives in its start's log line.
fn logged_node_name(server: &mut crate::binary::Server) -> String {
    loop {
        let line = server
            .stderr
            .recv_timeout(Duration::from_secs(10))
            .expect("the start's listening line");
        let event: serde_json::Value = serde_json::from_str(&line).unwrap();
        if event["fields"]["message"] == "petstore listening" {
            break event["fields"]["node"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
        }
    }
}

/// A node is named where it runs (`HOSTNAME`, its port, its pid): in its start's log line, its
/// heartbeat, and the finish's refusal, which says when it was last seen.
fn a_node_is_named_where_it_runs(database: &Database) {
    let mut command = petstore(database.arg());
    command.env("HOSTNAME", "shop-pod-7");
    let mut server = serve_command(command, Some(ADMIN), &[]);
    let node = logged_node_name(&mut server);
    let port = server.address.rsplit_once(':').unwrap().1;
    let (place, process) = node.split_once('/').unwrap_or_default();
    assert_eq!(place, format!("shop-pod-7:{port}"), "{node}");
    let (pid, tag) = process.split_once('-').unwrap_or_default();
    assert_eq!(pid, server.child.id().to_string(), "{node}");
    assert!(
        tag.len() == 4 && tag.bytes().all(|b| b.is_ascii_hexdigit()),
        "{node}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let heartbeats = || database.texts("SELECT node AS text FROM node_heartbeats");
    while heartbeats().is_empty() {
        assert!(
            Instant::now() < deadline,
            "no heartbeat 10 s after the start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(heartbeats(), std::slice::from_ref(&node));
    // Killed, it leaves its heartbeat; made to look older, it holds the finish up by name.
    server.signal("KILL");
    let _ = server.exited();
    database.execute("UPDATE node_heartbeats SET schema_version = '20261122000001'");
    let (code, said) = migrate(database, &["--finish"]);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains(&format!(
            "{node} (knows migrations up to 20261122000001, seen "
        )),
        "{said}"
    );
}

#[test]
fn a_node_is_named_where_it_runs_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    a_node_is_named_where_it_runs(&Database::Sqlite(dir.path().join("shop.db")));
}

#[test]
fn a_node_is_named_where_it_runs_on_postgres() {
    let Some(database) = ScratchPostgres::create() else {
        return;
    };
    a_node_is_named_where_it_runs(&Database::Postgres(database));
}

/// Outside a pod (no `HOSTNAME`, as under systemd), a node is named by the kernel's host name.
#[test]
fn a_node_without_hostname_is_named_by_the_kernels_host_name() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = petstore(dir.path().join("shop.db"));
    command.env_remove("HOSTNAME");
    let mut server = serve_command(command, Some(ADMIN), &[]);
    let node = logged_node_name(&mut server);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let port = server.address.rsplit_once(':').unwrap().1;
    assert!(
        node.starts_with(&format!("{}:{port}/", kernel.trim())),
        "{node}"
    );
    let (code, _) = server.terminate();
    assert_eq!(code, Some(0));
}

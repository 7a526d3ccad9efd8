//! Reads from a hot standby, through two real `petstore serve` processes on a throwaway
//! primary and standby: no read goes back in time, whichever node serves it, even while the
//! standby's replay is paused (docs/deployment.md, "Read standbys").

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use std::time::{Duration, Instant};

use diesel::prelude::*;
use serde_json::Value;

use crate::binary::{self, Answer, Server, serve_with};
use crate::cluster::Cluster;

const ADMIN: &str = "standbys-admin-0123456789abcdef012345678";

fn json(answer: &Answer) -> Value {
    serde_json::from_str(&answer.body).unwrap_or_else(|e| panic!("{e}: {}", answer.body))
}

/// One request to `node` with the admin key.
fn exchange(
    node: &Server,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Answer {
    binary::exchange(&node.address, method, path, ADMIN, headers, body).expect("the node answers")
}

/// The value of the sample `name` (with its labels, as printed) on `node`'s `/metrics`.
fn metric(node: &Server, name: &str) -> Option<f64> {
    let text = exchange(node, "GET", "/metrics", &[], None).body;
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .map(|value| value.trim().parse().unwrap())
}

fn standby_reads(node: &Server) -> f64 {
    metric(node, r#"petstore_db_reads_total{server="replica-1"}"#).unwrap_or(0.0)
}

fn primary_reads(node: &Server) -> f64 {
    metric(node, r#"petstore_db_reads_total{server="primary"}"#).unwrap_or(0.0)
}

/// Runs `sql` on the server at `url`.
fn execute(url: &str, sql: &str) {
    let mut conn = PgConnection::establish(url).unwrap();
    diesel::sql_query(sql).execute(&mut conn).unwrap();
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn stock(node: &Server, pet: i64, headers: &[(&str, &str)]) -> i64 {
    let answer = exchange(node, "GET", &format!("/v1/inventory/{pet}"), headers, None);
    assert_eq!(answer.status, 200, "{}", answer.body);
    json(&answer)["quantity"].as_i64().unwrap()
}

#[test]
fn a_read_on_another_node_sees_an_acknowledged_write_while_the_standby_replays_nothing() {
    let Some(primary) = Cluster::init() else {
        return;
    };
    primary.start();
    let standby = Cluster::standby_of(&primary);
    standby.start();
    let flags = [
        "--database-replica",
        &standby.url(),
        "--rate-limit",
        "1000000",
    ];
    let a = serve_with(primary.url(), Some(ADMIN), &flags);
    let b = serve_with(primary.url(), Some(ADMIN), &flags);
    for node in [&a, &b] {
        wait_for("the standby is up on the node", || {
            metric(node, r#"petstore_db_replica_up{server="replica-1"}"#) == Some(1.0)
        });
    }

    // A pet with 3 in stock, made on A.
    let category = exchange(
        &a,
        "POST",
        "/v1/categories",
        &[],
        Some(r#"{"name": "Dogs"}"#),
    );
    assert_eq!(category.status, 201, "{}", category.body);
    let category = json(&category)["id"].as_i64().unwrap();
    let pet = exchange(
        &a,
        "POST",
        "/v1/pets",
        &[],
        Some(&format!(r#"{{"name": "Rex", "categoryId": {category}}}"#)),
    );
    assert_eq!(pet.status, 201, "{}", pet.body);
    let token = pet.header("consistency-token").unwrap().to_owned();
    let pet = json(&pet)["id"].as_i64().unwrap();
    let set = exchange(
        &a,
        "PATCH",
        &format!("/v1/inventory/{pet}"),
        &[],
        Some(r#"{"quantity": 3}"#),
    );
    assert_eq!(set.status, 200, "{}", set.body);

    // While the standby replays, B's reads go to it, and see A's writes.
    let before = standby_reads(&b);
    assert_eq!(stock(&b, pet, &[]), 3);
    assert_eq!(stock(&b, pet, &[("Consistency-Token", token.as_str())]), 3);
    assert!(
        standby_reads(&b) >= before + 2.0,
        "the standby served B's reads"
    );

    // The standby stops replaying: it is frozen at 3 units.
    execute(&standby.url(), "SELECT pg_wal_replay_pause()");
    let set = exchange(
        &a,
        "PATCH",
        &format!("/v1/inventory/{pet}"),
        &[],
        Some(r#"{"quantity": 7}"#),
    );
    assert_eq!(set.status, 200, "{}", set.body);
    let token = set.header("consistency-token").unwrap().to_owned();

    // Without a token and with one, a read on B sees the write A acknowledged: the standby
    // has not replayed it, so the primary serves them.
    let (on_standby, on_primary) = (standby_reads(&b), primary_reads(&b));
    assert_eq!(stock(&b, pet, &[]), 7);
    assert_eq!(stock(&b, pet, &[("Consistency-Token", token.as_str())]), 7);
    assert_eq!(
        standby_reads(&b),
        on_standby,
        "the paused standby served no read"
    );
    assert!(primary_reads(&b) >= on_primary + 2.0);

    // A read that accepts an hour's staleness is served by the paused standby, as it was.
    let on_standby = standby_reads(&b);
    assert_eq!(stock(&b, pet, &[("Max-Staleness", "3600")]), 3);
    assert_eq!(standby_reads(&b), on_standby + 1.0);

    // Replaying again, the standby serves the token's read once it has the write.
    execute(&standby.url(), "SELECT pg_wal_replay_resume()");
    wait_for("the standby serves the token's read", || {
        let on_standby = standby_reads(&b);
        stock(&b, pet, &[("Consistency-Token", token.as_str())]) == 7
            && standby_reads(&b) > on_standby
    });
}

#[test]
fn a_standby_that_is_gone_costs_a_read_no_more_than_the_wait() {
    let Some(primary) = Cluster::init() else {
        return;
    };
    primary.start();
    let standby = Cluster::standby_of(&primary);
    standby.start();
    let a = serve_with(
        primary.url(),
        Some(ADMIN),
        &[
            "--database-replica",
            &standby.url(),
            "--replica-wait-ms",
            "50",
        ],
    );
    wait_for("the standby is up", || {
        metric(&a, r#"petstore_db_replica_up{server="replica-1"}"#) == Some(1.0)
    });
    standby.kill();
    // Reads go on, on the primary; the standby is marked down within a second.
    let started = Instant::now();
    for _ in 0..20 {
        let answer = exchange(&a, "GET", "/v1/categories", &[], None);
        assert_eq!(answer.status, 200, "{}", answer.body);
    }
    // Far below what waiting on the dead standby would cost (a connection time-out each).
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "20 reads took {:?}",
        started.elapsed()
    );
    wait_for("the standby is marked down", || {
        metric(&a, r#"petstore_db_replica_up{server="replica-1"}"#) == Some(0.0)
    });
    // The log says so, with what failed, after it said the standby was up.
    let mut seen = Vec::new();
    wait_for_lines(&a, &mut seen, "the standby logged down", |seen| {
        said_of(seen, "replica-1")
            .iter()
            .any(|(message, _)| message == "read standby down")
    });
    let said = said_of(&seen, "replica-1");
    assert_eq!(said[0].0, "read standby up", "{said:?}");
    let (_, error) = said
        .iter()
        .find(|(message, _)| message == "read standby down")
        .unwrap();
    assert!(
        error.contains("cannot connect") || error.contains("its probe failed"),
        "{said:?}"
    );
}

/// The node's log lines about read standbys (`read standby up`, `read standby down`) since
/// the last call, added to `seen`.
fn standby_lines(node: &Server, seen: &mut Vec<Value>) {
    seen.extend(
        node.stderr
            .try_iter()
            .filter_map(|line| serde_json::from_str::<Value>(&line).ok())
            .filter(|event| {
                event["fields"]["message"]
                    .as_str()
                    .is_some_and(|message| message.starts_with("read standby"))
            }),
    );
}

/// Of `seen`, the lines about `server`, as (message, error).
fn said_of(seen: &[Value], server: &str) -> Vec<(String, String)> {
    seen.iter()
        .filter(|event| event["fields"]["server"] == server)
        .map(|event| {
            let field = |name: &str| event["fields"][name].as_str().unwrap_or("").to_owned();
            (field("message"), field("error"))
        })
        .collect()
}

/// Waits until the node has logged what `done` looks for, gathering its standby lines.
fn wait_for_lines(
    node: &Server,
    seen: &mut Vec<Value>,
    what: &str,
    done: impl Fn(&[Value]) -> bool,
) {
    wait_for(what, || {
        standby_lines(node, seen);
        done(seen)
    });
}

#[test]
fn a_standby_that_serves_no_reads_is_logged_at_start_with_its_error_and_again_on_a_change() {
    let Some(primary) = Cluster::init() else {
        return;
    };
    primary.start();
    // A role that may connect but lacks pg_read_all_stats: PostgreSQL shows it a standby's
    // WAL receiver, not the timeline it receives.
    execute(&primary.url(), "CREATE ROLE reader LOGIN");
    let standby = Cluster::standby_of(&primary);
    standby.start();
    let nothing_there = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let wrong_port =
        format!("postgres://postgres@127.0.0.1:{nothing_there}/postgres?sslmode=disable");
    let without_grant = format!(
        "postgres://reader@127.0.0.1:{}/postgres?sslmode=disable",
        standby.port
    );
    let node = serve_with(
        primary.url(),
        Some(ADMIN),
        &[
            "--database-replica",
            &wrong_port,
            "--database-replica",
            &without_grant,
            "--database-replica",
            &standby.url(),
        ],
    );
    let mut seen = Vec::new();
    wait_for_lines(&node, &mut seen, "a line for each standby", |seen| {
        ["replica-1", "replica-2", "replica-3"]
            .iter()
            .all(|server| !said_of(seen, server).is_empty())
    });
    let wrong = said_of(&seen, "replica-1");
    assert_eq!(wrong[0].0, "read standby down", "{wrong:?}");
    assert!(
        wrong[0].1.contains("cannot connect")
            && wrong[0].1.contains(&nothing_there.to_string())
            && wrong[0].1.contains("Connection refused"),
        "the connection's own error: {wrong:?}"
    );
    let ungranted = said_of(&seen, "replica-2");
    assert_eq!(ungranted[0].0, "read standby down", "{ungranted:?}");
    assert!(
        ungranted[0].1.contains("pg_read_all_stats") && ungranted[0].1.contains("reader"),
        "the grant it lacks, and the role: {ungranted:?}"
    );
    assert_eq!(
        said_of(&seen, "replica-3"),
        [("read standby up".to_owned(), String::new())],
        "the same standby, as a role with the grant, serves"
    );
    for (server, up) in [("replica-1", 0.0), ("replica-2", 0.0), ("replica-3", 1.0)] {
        let name = format!(r#"petstore_db_replica_up{{server="{server}"}}"#);
        assert_eq!(metric(&node, &name), Some(up), "{server}");
    }

    // Ten probes later, nothing has changed and nothing more is said.
    std::thread::sleep(Duration::from_millis(1200));
    standby_lines(&node, &mut seen);
    for server in ["replica-1", "replica-2", "replica-3"] {
        assert_eq!(said_of(&seen, server).len(), 1, "{server}: {seen:?}");
    }

    // The grant given on the primary reaches the standby, and the change is logged once.
    execute(&primary.url(), "GRANT pg_read_all_stats TO reader");
    wait_for_lines(&node, &mut seen, "the standby up for the role", |seen| {
        said_of(seen, "replica-2").len() == 2
    });
    assert_eq!(said_of(&seen, "replica-2")[1].0, "read standby up");
    assert_eq!(
        metric(&node, r#"petstore_db_replica_up{server="replica-2"}"#),
        Some(1.0)
    );
    standby_lines(&node, &mut seen);
    assert_eq!(said_of(&seen, "replica-1").len(), 1, "{seen:?}");
}

#[test]
fn a_bad_consistency_header_is_a_json_400() {
    let dir = tempfile::tempdir().unwrap();
    let a = serve_with(dir.path().join("shop.db"), Some(ADMIN), &[]);
    for (name, value) in [("Consistency-Token", "tomorrow"), ("Max-Staleness", "-3")] {
        let answer = exchange(&a, "GET", "/v1/categories", &[(name, value)], None);
        assert_eq!(answer.status, 400, "{name}: {value}");
        assert_eq!(json(&answer)["code"], "invalid_parameter");
    }
    // A node on one database gives no token: its reads are never behind.
    let made = exchange(
        &a,
        "POST",
        "/v1/categories",
        &[],
        Some(r#"{"name": "Cats"}"#),
    );
    assert_eq!(made.status, 201);
    assert_eq!(made.header("consistency-token"), None);
}

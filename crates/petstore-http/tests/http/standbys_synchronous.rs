//! Reads from a synchronous standby, through two real `petstore serve` processes on a
//! throwaway primary whose commits wait for its standby (`remote_apply`): reads of the latest
//! state go to the standby and ask the primary nothing; once the primary stops waiting for
//! it, they ask again, and a write the standby has not replayed is never missed
//! (docs/deployment.md, "Read standbys").

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use std::time::{Duration, Instant};

use diesel::prelude::*;
use serde_json::Value;

use crate::binary::{self, Server, serve_with};
use crate::cluster::Cluster;

const ADMIN: &str = "synchronous-admin-0123456789abcdef0123456";

/// The position question's text, as the primary logs each execution of it: the probe's
/// statement, which asks more in the same line, and a commit's token ask it too.
const QUESTION: &str = "SELECT (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::bigint";

fn send(node: &Server, method: &str, path: &str, body: Option<&str>) -> Value {
    let answer =
        binary::exchange(&node.address, method, path, ADMIN, &[], body).expect("the node answers");
    assert!(
        (200..300).contains(&answer.status),
        "{method} {path}: {} {}",
        answer.status,
        answer.body
    );
    serde_json::from_str(&answer.body).unwrap()
}

fn metric(node: &Server, name: &str) -> Option<f64> {
    let text = binary::exchange(&node.address, "GET", "/metrics", ADMIN, &[], None)
        .expect("the node answers")
        .body;
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .map(|value| value.trim().parse().unwrap())
}

fn synchronous(node: &Server) -> Option<f64> {
    metric(
        node,
        r#"petstore_db_replica_synchronous{server="replica-1"}"#,
    )
}

/// Reads `server` served for `node` (the primary's count includes each scrape's own).
fn reads_on(node: &Server, server: &str) -> f64 {
    metric(
        node,
        &format!(r#"petstore_db_reads_total{{server="{server}"}}"#),
    )
    .unwrap_or(0.0)
}

fn execute(url: &str, statements: &[&str]) {
    let mut conn = PgConnection::establish(url).unwrap();
    for sql in statements {
        diesel::sql_query(*sql).execute(&mut conn).unwrap();
    }
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How many times the primary has answered the position question.
fn questions(primary: &Cluster) -> usize {
    primary
        .log()
        .lines()
        .filter(|line| line.trim_end().ends_with(QUESTION))
        .count()
}

fn stock(node: &Server, pet: i64) -> i64 {
    send(node, "GET", &format!("/v1/inventory/{pet}"), None)["quantity"]
        .as_i64()
        .unwrap()
}

fn set_stock(node: &Server, pet: i64, quantity: i64) {
    let body = format!(r#"{{"quantity": {quantity}}}"#);
    send(node, "PATCH", &format!("/v1/inventory/{pet}"), Some(&body));
}

#[test]
fn a_synchronous_standby_serves_the_latest_state_unasked_until_the_primary_stops_waiting() {
    let Some(primary) = Cluster::init() else {
        return;
    };
    primary.configure("log_statement = 'all'\n");
    primary.start();
    let standby = Cluster::standby_of(&primary);
    standby.configure("cluster_name = 'shop_standby'\n");
    standby.start();
    let waiting_for = |setting: &str| {
        execute(
            &primary.url(),
            &[
                "ALTER SYSTEM SET synchronous_standby_names = 'shop_standby'",
                &format!("ALTER SYSTEM SET synchronous_commit = '{setting}'"),
                "SELECT pg_reload_conf()",
            ],
        );
    };
    waiting_for("remote_apply");
    let flags = [
        "--database-replica",
        &standby.url(),
        "--rate-limit",
        "1000000",
    ];
    let a = serve_with(primary.url(), Some(ADMIN), &flags);
    let b = serve_with(primary.url(), Some(ADMIN), &flags);
    for node in [&a, &b] {
        wait_for("the node finds its standby synchronous", || {
            synchronous(node) == Some(1.0)
        });
    }

    let category = send(&a, "POST", "/v1/categories", Some(r#"{"name": "Dogs"}"#));
    let body = format!(r#"{{"name": "Rex", "categoryId": {}}}"#, category["id"]);
    let pet = send(&a, "POST", "/v1/pets", Some(&body))["id"]
        .as_i64()
        .unwrap();

    // Each write A acknowledges, B's next read shows: the standby applied it before A's
    // commit was acknowledged, and B reads there.
    let on_standby = reads_on(&b, "replica-1");
    for quantity in 1..=10 {
        set_stock(&a, pet, quantity);
        assert_eq!(stock(&b, pet), quantity);
    }
    // (B's own reads, of the key a request carries, count too.)
    assert!(reads_on(&b, "replica-1") >= on_standby + 10.0);

    // With no write, B's reads ask the primary nothing.
    let asked = questions(&primary);
    for _ in 0..20 {
        assert_eq!(stock(&b, pet), 10);
    }
    assert_eq!(
        questions(&primary),
        asked,
        "a read on the synchronous standby asked the primary's position"
    );
    assert!(
        asked > 0,
        "the question's text is not the one the primary logs"
    );

    // The primary stops waiting for the standby; once B has seen it, a write the paused
    // standby has not replayed is read from the primary, after a question.
    waiting_for("local");
    wait_for("B finds its standby no longer synchronous", || {
        synchronous(&b) == Some(0.0)
    });
    execute(&standby.url(), &["SELECT pg_wal_replay_pause()"]);
    set_stock(&a, pet, 11);
    let (asked, on_primary) = (questions(&primary), reads_on(&b, "primary"));
    assert_eq!(stock(&b, pet), 11);
    assert!(
        questions(&primary) > asked,
        "B asked the primary's position"
    );
    assert!(reads_on(&b, "primary") >= on_primary + 1.0);

    // Replaying and waited for again, the standby serves B's reads unasked once more.
    execute(&standby.url(), &["SELECT pg_wal_replay_resume()"]);
    waiting_for("remote_apply");
    wait_for("B finds its standby synchronous again", || {
        synchronous(&b) == Some(1.0)
    });
    let on_standby = reads_on(&b, "replica-1");
    assert_eq!(stock(&b, pet), 11);
    assert!(reads_on(&b, "replica-1") >= on_standby + 1.0);
}

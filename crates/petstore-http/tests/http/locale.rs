//! What the service does never depends on the language of the server's messages: a burst of
//! writes on PostgreSQL decides by the kind of a failure (a refusal by the rules, or anything
//! else), not by its text. Each test runs on a cluster of its own whose `lc_messages` is set.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use std::process::Command;
use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::prelude::*;

use crate::binary::{self, serve_with};
use crate::cluster::Cluster;

const ADMIN: &str = "locale-admin-0123456789abcdef0123456789";

/// Orders sent at once for the pet whose row another session holds, and as many
/// replacements of that pet.
const ORDERS: usize = 16;

/// Whether this machine has `locale` (as `locale -a` lists it, e.g. `de_DE.utf8`). CI makes
/// the German one (`.ci/run`); elsewhere a missing one skips the test, saying so.
fn has_locale(locale: &str) -> bool {
    Command::new("locale").arg("-a").output().is_ok_and(|out| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l == locale)
    })
}

/// A started cluster whose server speaks `lc_messages`; `None` where it cannot be had here.
fn cluster_speaking(lc_messages: &str, listed_as: &str) -> Option<Cluster> {
    if !has_locale(listed_as) {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have the locale {listed_as} (.ci/run makes it)"
        );
        eprintln!("skipped: this machine has no locale {listed_as} (localedef makes it)");
        return None;
    }
    let cluster = Cluster::init()?;
    cluster.configure(&format!("lc_messages = '{lc_messages}'\n"));
    cluster.start();
    Some(cluster)
}

/// The server's words for a division by zero, asked of `url`.
fn a_message_of(url: &str) -> String {
    let mut conn = PgConnection::establish(url).unwrap();
    conn.batch_execute("SELECT 1 / 0").unwrap_err().to_string()
}

/// `ORDERS` orders for one pet, and as many replacements of it, are sent at once while
/// another session holds the pet's row, and the writer threads take them in bursts. An order
/// names its pet, so a burst whose lock statement skipped the held row sets it aside to run
/// alone. A replacement names no row: its burst meets the held row, waits past the burst's
/// bound, gives up and runs its jobs alone. Alone, each write waits for the row as long as
/// it must: every order is answered 201 and every replacement 200 once the row is let go.
fn every_order_waits_for_a_held_row(lc_messages: &str, listed_as: &str, expected_words: &str) {
    let Some(cluster) = cluster_speaking(lc_messages, listed_as) else {
        return;
    };
    let url = format!(
        "postgres://postgres@127.0.0.1:{}/postgres?sslmode=disable",
        cluster.port
    );
    let words = a_message_of(&url);
    assert!(
        words.contains(expected_words),
        "the server speaks {lc_messages}: {words}"
    );
    let server = serve_with(&url, Some(ADMIN), &[]);
    let (category, pet) = server.first_pet_with_stock(ADMIN, 100);

    let mut holder = PgConnection::establish(&url).unwrap();
    holder
        .batch_execute(&format!(
            "BEGIN; SELECT id FROM pets WHERE id = {pet} FOR UPDATE;"
        ))
        .unwrap();
    let address = server.address.as_str();
    let order = format!(r#"{{"petId": {pet}, "quantity": 1}}"#);
    let (replace_at, replacement) = (
        format!("/v1/pets/{pet}"),
        format!(r#"{{"name": "Rex", "categoryId": {category}}}"#),
    );
    let (orders, replacements): (Vec<u16>, Vec<u16>) = std::thread::scope(|scope| {
        let send = |method: &'static str, path: &str, body: &str| {
            let (path, body) = (path.to_owned(), body.to_owned());
            scope.spawn(move || {
                binary::send_to(address, method, &path, ADMIN, &[], Some(&body))
                    .unwrap()
                    .0
            })
        };
        let sent: Vec<_> = (0..ORDERS)
            .flat_map(|_| {
                [
                    send("POST", "/v1/store/orders", &order),
                    send("PUT", &replace_at, &replacement),
                ]
            })
            .collect();
        std::thread::sleep(Duration::from_millis(500));
        holder.batch_execute("COMMIT").unwrap();
        let statuses: Vec<u16> = sent.into_iter().map(|s| s.join().unwrap()).collect();
        (
            statuses.iter().step_by(2).copied().collect(),
            statuses.iter().skip(1).step_by(2).copied().collect(),
        )
    });
    assert_eq!(
        orders, [201; ORDERS],
        "every order placed once the row was let go"
    );
    assert_eq!(
        replacements, [200; ORDERS],
        "every replacement made once the row was let go"
    );
    let metrics = server.get("/metrics", ADMIN);
    let reruns: f64 = metrics
        .lines()
        .find(|line| line.starts_with("petstore_db_burst_reruns"))
        .and_then(|line| line.split_whitespace().last())
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("no burst reruns in {metrics}"));
    assert!(
        reruns >= 1.0,
        "a burst met the held row and gave up: {reruns}"
    );
    let stock = server.get(&format!("/v1/inventory/{pet}"), ADMIN);
    assert!(
        stock.contains(&format!(r#""quantity":{}"#, 100 - ORDERS)),
        "each order took its unit once: {stock}"
    );
}

#[test]
fn a_burst_meeting_a_held_row_runs_again_on_a_german_server() {
    every_order_waits_for_a_held_row("de_DE.UTF-8", "de_DE.utf8", "Division durch Null");
}

#[test]
fn a_burst_meeting_a_held_row_runs_again_on_an_english_server() {
    every_order_waits_for_a_held_row("C", "C", "division by zero");
}

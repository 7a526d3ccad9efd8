//! Two `petstore serve` processes on one PostgreSQL database, as behind a load balancer: every
//! guarantee holds whichever node a request lands on, and while a node dies. Runs where
//! `PETSTORE_TEST_POSTGRES_URL` is set.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use crate::binary;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use binary::{Server, petstore, send_to, serve_with};
use petstore_store::testing::ScratchPostgres;
use serde_json::Value;

const ADMIN: &str = "nodes-admin-0123456789abcdef0123456789";

/// Two nodes on one scratch database, both given the same bootstrap admin key.
fn two_nodes(flags: &[&str]) -> (ScratchPostgres, Server, Server) {
    let database = ScratchPostgres::create().expect("a PostgreSQL server for tests");
    // The load here is the point, not the per-key rate limit (tests/http/auth.rs tests that).
    let flags = [flags, &["--rate-limit", "1000000"]].concat();
    let flags = flags.as_slice();
    let a = serve_with(database.url(), Some(ADMIN), flags);
    let b = serve_with(database.url(), Some(ADMIN), flags);
    (database, a, b)
}

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

fn call(node: &str, method: &str, path: &str, key: &str, body: Option<&str>) -> (u16, Value) {
    let (status, body) = send_to(node, method, path, key, &[], body).expect("the node answers");
    let value = if body.is_empty() {
        Value::Null
    } else {
        json(&body)
    };
    (status, value)
}

/// A pet with `stock` units, made through `node`; returns its id.
fn pet_with_stock(node: &str, name: &str, stock: u32) -> i64 {
    let (_, category) = call(
        node,
        "POST",
        "/v1/categories",
        ADMIN,
        Some(&format!(r#"{{"name": "{name} kind"}}"#)),
    );
    let (status, pet) = call(
        node,
        "POST",
        "/v1/pets",
        ADMIN,
        Some(&format!(
            r#"{{"name": "{name}", "categoryId": {}}}"#,
            category["id"]
        )),
    );
    assert_eq!(status, 201, "{pet}");
    let id = pet["id"].as_i64().unwrap();
    let (status, _) = call(
        node,
        "PATCH",
        &format!("/v1/inventory/{id}"),
        ADMIN,
        Some(&format!(r#"{{"quantity": {stock}}}"#)),
    );
    assert_eq!(status, 200);
    id
}

/// A new key with `role`, made through `node`: its id and secret.
fn new_key(node: &str, role: &str, name: &str) -> (i64, String) {
    let (status, key) = call(
        node,
        "POST",
        "/v1/keys",
        ADMIN,
        Some(&format!(r#"{{"name": "{name}", "role": "{role}"}}"#)),
    );
    assert_eq!(status, 201, "{key}");
    (
        key["id"].as_i64().unwrap(),
        key["key"].as_str().unwrap().to_owned(),
    )
}

fn stock_of(node: &str, pet: i64) -> i64 {
    let (_, item) = call(node, "GET", &format!("/v1/inventory/{pet}"), ADMIN, None);
    item["quantity"].as_i64().unwrap()
}

#[test]
fn two_nodes_sell_exactly_the_stock_and_place_one_order_per_idempotency_key() {
    if !petstore_store::testing::postgres_configured() {
        return;
    }
    let (_database, a, b) = two_nodes(&[]);
    let nodes = [a.address.as_str(), b.address.as_str()];
    let (_, customer) = new_key(&a.address, "customer", "racer");

    // 200 orders for 10 units, spread over both nodes, all at once.
    let pet = pet_with_stock(&a.address, "Rex", 10);
    let order = format!(r#"{{"petId": {pet}, "quantity": 1}}"#);
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let racers: Vec<_> = (0..200)
            .map(|n| {
                let (node, order, customer) = (nodes[n % 2], &order, &customer);
                scope.spawn(move || call(node, "POST", "/v1/store/orders", customer, Some(order)).0)
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let sold = statuses.iter().filter(|s| **s == 201).count();
    assert_eq!(sold, 10, "{statuses:?}");
    assert!(
        statuses.iter().all(|s| *s == 201 || *s == 409),
        "{statuses:?}"
    );
    assert_eq!(stock_of(&b.address, pet), 0);

    // One key, sent 40 times over both nodes at once: one order, the same answer each time.
    let pet = pet_with_stock(&b.address, "Max", 100);
    let order = format!(r#"{{"petId": {pet}, "quantity": 2}}"#);
    let answers: Vec<(u16, String)> = std::thread::scope(|scope| {
        let retries: Vec<_> = (0..40)
            .map(|n| {
                let (node, order, customer) = (nodes[n % 2], &order, &customer);
                scope.spawn(move || {
                    send_to(
                        node,
                        "POST",
                        "/v1/store/orders",
                        customer,
                        &[("Idempotency-Key", "one-order-please")],
                        Some(order),
                    )
                    .unwrap()
                })
            })
            .collect();
        retries.into_iter().map(|r| r.join().unwrap()).collect()
    });
    assert!(answers.iter().all(|(s, _)| *s == 201), "{answers:?}");
    let bodies: BTreeSet<&str> = answers.iter().map(|(_, body)| body.as_str()).collect();
    assert_eq!(
        bodies.len(),
        1,
        "every retry got the first answer: {bodies:?}"
    );
    let (_, orders) = call(
        &a.address,
        "GET",
        &format!("/v1/store/orders?petId={pet}"),
        ADMIN,
        None,
    );
    assert_eq!(orders.as_array().unwrap().len(), 1, "{orders}");
    assert_eq!(stock_of(&a.address, pet), 98);
}

/// Eight writers across two nodes for twenty seconds (new pets, and orders spread over
/// twenty pets, each recording two or three events), and a follower polling the feed with
/// `after=` on each node: each follower sees every event exactly once, in growing ids, the
/// same list as the feed read whole at the end. Writers commit in any order; the feed must
/// still never show an event below one a follower already passed.
#[test]
fn followers_on_both_nodes_miss_nothing_while_eight_writers_write_for_twenty_seconds() {
    if !petstore_store::testing::postgres_configured() {
        return;
    }
    let (_database, a, b) = two_nodes(&[]);
    let (_, category) = call(
        &a.address,
        "POST",
        "/v1/categories",
        ADMIN,
        Some(r#"{"name": "Feed"}"#),
    );
    let category = category["id"].as_i64().unwrap();
    let stocked: Vec<i64> = (0..20)
        .map(|n| pet_with_stock(&a.address, &format!("Stocked {n}"), 1_000_000))
        .collect();
    let writing = AtomicBool::new(true);
    // Set only once every writer has returned: no write is in flight after it.
    let written = AtomicBool::new(false);
    let nodes = [a.address.as_str(), b.address.as_str()];

    let followed: Vec<Vec<i64>> = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..8)
            .map(|n| {
                let (writing, stocked, node) = (&writing, &stocked, nodes[n % 2]);
                scope.spawn(move || {
                    let mut made = 0_usize;
                    while writing.load(Ordering::Relaxed) {
                        let (path, body) = if n < 4 {
                            (
                                "/v1/pets",
                                format!(
                                    r#"{{"name": "Pet {n}-{made}", "categoryId": {category}}}"#
                                ),
                            )
                        } else {
                            let pet = stocked[(made * 7 + n) % stocked.len()];
                            (
                                "/v1/store/orders",
                                format!(r#"{{"petId": {pet}, "quantity": 1}}"#),
                            )
                        };
                        let (status, reply) = call(node, "POST", path, ADMIN, Some(&body));
                        assert!(matches!(status, 200 | 201), "{status} {reply}");
                        made += 1;
                    }
                    made
                })
            })
            .collect();
        let followers: Vec<_> = nodes
            .into_iter()
            .map(|node| {
                let written = &written;
                scope.spawn(move || {
                    let mut seen = Vec::new();
                    let mut after = 0;
                    loop {
                        let writers_done = written.load(Ordering::SeqCst);
                        let ids = event_ids_after(node, after);
                        if let Some(last) = ids.last() {
                            after = *last;
                        }
                        seen.extend(&ids);
                        // Once every write has returned, an empty page means the end.
                        if writers_done && ids.is_empty() {
                            return seen;
                        }
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs(20));
        writing.store(false, Ordering::Relaxed);
        let made: usize = writers.into_iter().map(|w| w.join().unwrap()).sum();
        assert!(made > 200, "the writers wrote: {made}");
        written.store(true, Ordering::SeqCst);
        followers.into_iter().map(|f| f.join().unwrap()).collect()
    });

    let mut everything = Vec::new();
    let mut after = 0;
    loop {
        let ids = event_ids_after(&b.address, after);
        let Some(last) = ids.last() else { break };
        after = *last;
        everything.extend(ids);
    }
    assert!(
        everything.windows(2).all(|w| w[0] < w[1]),
        "ids only grow, none twice"
    );
    for (node, seen) in nodes.iter().zip(&followed) {
        assert_eq!(
            seen.len(),
            everything.len(),
            "the follower on {node} saw every event once"
        );
        assert_eq!(
            seen, &everything,
            "the follower on {node}: none missed, none twice"
        );
    }
}

#[test]
fn a_change_and_a_revocation_on_one_node_reach_the_other_within_a_second() {
    if !petstore_store::testing::postgres_configured() {
        return;
    }
    let (database, a, b) = two_nodes(&[]);

    // A stream on B sees a change made through A.
    let mut stream = b.open_stream(ADMIN, None);
    let mut text = String::new();
    read_until(&mut stream, &mut text, ": connected");
    let made = Instant::now();
    a.create_category(ADMIN, "Across");
    read_until(&mut stream, &mut text, "event: category.created");
    let took = made.elapsed();
    assert!(took < Duration::from_secs(1), "took {took:?}");

    // A key revoked through A is refused by B, which had just verified (and cached) it.
    let (id, customer) = new_key(&a.address, "customer", "leaver");
    assert_eq!(
        call(&b.address, "GET", "/v1/categories", &customer, None).0,
        200
    );
    assert_eq!(
        call(&a.address, "DELETE", &format!("/v1/keys/{id}"), ADMIN, None).0,
        204
    );
    let took = refused_within(&b.address, &customer);
    assert!(took < Duration::from_secs(1), "took {took:?}");

    // The same for a key revoked from the command line, another process.
    let (id, customer) = new_key(&b.address, "customer", "cli leaver");
    assert_eq!(
        call(&b.address, "GET", "/v1/categories", &customer, None).0,
        200
    );
    let revoked = petstore(database.url())
        .args(["keys", "revoke", &id.to_string()])
        .output()
        .unwrap();
    assert!(revoked.status.success(), "{revoked:?}");
    let took = refused_within(&b.address, &customer);
    assert!(took < Duration::from_secs(1), "took {took:?}");
}

/// The ids of a page of up to 100 events after `after`, as `node`'s feed gives them.
fn event_ids_after(node: &str, after: i64) -> Vec<i64> {
    let (_, page) = call(
        node,
        "GET",
        &format!("/v1/events?after={after}&limit=100"),
        ADMIN,
        None,
    );
    page.as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().parse().unwrap())
        .collect()
}

/// How long until `node` refuses `key`, polling; panics after 5 s.
fn refused_within(node: &str, key: &str) -> Duration {
    let revoked = Instant::now();
    while call(node, "GET", "/v1/categories", key, None).0 != 401 {
        assert!(revoked.elapsed() < Duration::from_secs(5), "never refused");
        std::thread::sleep(Duration::from_millis(10));
    }
    revoked.elapsed()
}

fn read_until(stream: &mut std::net::TcpStream, text: &mut String, wanted: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut buffer = [0u8; 4096];
    while !text.contains(wanted) {
        assert!(Instant::now() < deadline, "no {wanted:?} in {text}");
        if let Ok(n) = stream.read(&mut buffer) {
            text.push_str(&String::from_utf8_lossy(&buffer[..n]));
        }
    }
}

#[test]
fn killing_one_node_under_order_load_loses_no_acknowledged_order() {
    if !petstore_store::testing::postgres_configured() {
        return;
    }
    let (_database, a, b) = two_nodes(&[]);
    let units = 1_000_000;
    let pet = pet_with_stock(&a.address, "Bulk", units);
    let order = format!(r#"{{"petId": {pet}, "quantity": 1}}"#);
    let (to_a, to_b) = (a.address.clone(), b.address.clone());
    let placing = AtomicBool::new(true);
    let acknowledged: Vec<i64> = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..8)
            .map(|n| {
                let node = if n % 2 == 0 { &to_a } else { &to_b };
                let (order, placing) = (&order, &placing);
                scope.spawn(move || {
                    let mut ids = Vec::new();
                    while placing.load(Ordering::Relaxed) {
                        // After the kill, A's clients get no answer: what they sent may or may
                        // not have committed, but it was not acknowledged.
                        match send_to(node, "POST", "/v1/store/orders", ADMIN, &[], Some(order)) {
                            Some((201, body)) => ids.push(json(&body)["id"].as_i64().unwrap()),
                            Some(_) => {}
                            None => std::thread::sleep(Duration::from_millis(10)),
                        }
                    }
                    ids
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(700));
        // SIGKILL: no drain, no rollback, connections cut mid-transaction.
        a.kill();
        std::thread::sleep(Duration::from_millis(700));
        placing.store(false, Ordering::Relaxed);
        clients
            .into_iter()
            .flat_map(|c| c.join().unwrap())
            .collect()
    });
    assert!(
        acknowledged.len() > 20,
        "orders were placed: {}",
        acknowledged.len()
    );

    // B kept serving, and has every order either node acknowledged.
    for id in &acknowledged {
        let (status, order) = call(
            &b.address,
            "GET",
            &format!("/v1/store/orders/{id}"),
            ADMIN,
            None,
        );
        assert_eq!(status, 200, "acknowledged order {id} is there: {order}");
    }
    // Every unit is in stock or in an order, acknowledged or not.
    let mut ordered = 0;
    let mut cursor = String::new();
    loop {
        let (status, page) = send_to(
            &b.address,
            "GET",
            &format!("/v1/store/orders?petId={pet}&limit=100{cursor}"),
            ADMIN,
            &[],
            None,
        )
        .unwrap();
        assert_eq!(status, 200);
        let page = json(&page);
        let items = page.as_array().unwrap();
        ordered += items
            .iter()
            .map(|o| o["quantity"].as_i64().unwrap())
            .sum::<i64>();
        let Some(last) = items.last() else { break };
        if items.len() < 100 {
            break;
        }
        cursor = format!("&cursor=k{:x}", last["id"].as_i64().unwrap());
    }
    assert_eq!(stock_of(&b.address, pet) + ordered, i64::from(units));
}

/// Accepts webhook deliveries on 127.0.0.1 and records each `webhook-id`, answering 200.
fn receiver() -> (String, Arc<Mutex<Vec<i64>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://127.0.0.1:{}/hook",
        listener.local_addr().unwrap().port()
    );
    let received = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&received);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut id, mut length) = (None, 0);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                let lower = line.to_lowercase();
                if let Some(value) = lower.strip_prefix("webhook-id:") {
                    id = value.trim().parse::<i64>().ok();
                }
                if let Some(value) = lower.strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
                line.clear();
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            if let Some(id) = id {
                log.lock().unwrap().push(id);
            }
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    (url, received)
}

#[test]
fn with_two_dispatchers_each_event_is_delivered_once_in_order() {
    if !petstore_store::testing::postgres_configured() {
        return;
    }
    let (_database, a, b) =
        two_nodes(&["--webhook-allow-private-targets", "--webhook-poll-ms", "20"]);
    let (url, received) = receiver();
    let (status, _) = call(
        &a.address,
        "POST",
        "/v1/webhooks",
        ADMIN,
        Some(&format!(
            r#"{{"url": "{url}", "events": ["category.created"]}}"#
        )),
    );
    assert_eq!(status, 201);
    for n in 0..20 {
        let node = if n % 2 == 0 { &a } else { &b };
        node.create_category(ADMIN, &format!("Kind {n}"));
    }
    let (_, events) = call(&b.address, "GET", "/v1/events?limit=100", ADMIN, None);
    let expected: Vec<i64> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "category.created")
        .map(|e| e["id"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(expected.len(), 20);
    let deadline = Instant::now() + Duration::from_secs(20);
    while received.lock().unwrap().len() < expected.len() {
        assert!(
            Instant::now() < deadline,
            "only {:?}",
            received.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Give a duplicate, if any were coming, the time to arrive.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(*received.lock().unwrap(), expected, "each once, in order");
}

/// A point read answered after a write was acknowledged on the other node sees that write,
/// while other clients keep both nodes' readers busy, so that reads share bursts and their
/// pets are fetched together (`postgres/reads.rs` in the store): what a burst serves is at
/// least as fresh as its last read's arrival.
#[test]
fn a_point_read_on_one_node_sees_a_write_acknowledged_on_the_other() {
    if !petstore_store::testing::postgres_configured() {
        return;
    }
    let (_database, a, b) = two_nodes(&[]);
    let nodes = [a.address.clone(), b.address.clone()];
    let pets: Vec<i64> = (0..12)
        .map(|n| pet_with_stock(&nodes[0], &format!("Fresh {n}"), 1))
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let background: Vec<_> = (0..8)
        .map(|n| {
            let (node, pets, stop) = (nodes[n % 2].clone(), pets.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut reads = 0;
                while !stop.load(Ordering::Relaxed) {
                    stock_of(&node, pets[(n + reads) % pets.len()]);
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    let checkers: Vec<_> = pets[..4]
        .iter()
        .enumerate()
        .map(|(n, &pet)| {
            let nodes = nodes.clone();
            std::thread::spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(6);
                let mut checked = 0;
                while Instant::now() < deadline {
                    let (writer, reader) = (&nodes[checked % 2], &nodes[(checked + 1) % 2]);
                    let level = 100 * n + checked % 97 + 2;
                    let (status, body) = call(
                        writer,
                        "PATCH",
                        &format!("/v1/inventory/{pet}"),
                        ADMIN,
                        Some(&format!(r#"{{"quantity": {level}}}"#)),
                    );
                    assert_eq!(status, 200, "{body}");
                    let (status, item) =
                        call(reader, "GET", &format!("/v1/inventory/{pet}"), ADMIN, None);
                    assert_eq!(status, 200, "{item}");
                    assert_eq!(
                        item["quantity"].as_u64(),
                        Some(level as u64),
                        "pet {pet}: read on {reader} after a write acknowledged on {writer}"
                    );
                    let (status, read) =
                        call(reader, "GET", &format!("/v1/pets/{pet}"), ADMIN, None);
                    assert_eq!(status, 200, "{read}");
                    assert_eq!(read["status"], "available", "{read}");
                    checked += 1;
                }
                checked
            })
        })
        .collect();
    let checked: usize = checkers.into_iter().map(|c| c.join().unwrap()).sum();
    stop.store(true, Ordering::Relaxed);
    let background: usize = background.into_iter().map(|r| r.join().unwrap()).sum();
    assert!(checked >= 40, "{checked} writes read back");
    assert!(background >= 200, "{background} reads beside them");
}

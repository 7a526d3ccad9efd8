//! A console page's trips to the store, counted by the store-call spans under its request's
//! span.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use petstore_store::testing::TestDatabase;

use super::{ADMIN, Collector, Exported, start};
use crate::binary;

/// A console page looks its session up in the same trip to the store as its data: one
/// store call under the page's request span (a fresh session has no use to record yet).
#[test]
fn a_console_page_takes_one_trip_to_the_store_for_its_session_and_its_data() {
    let database = TestDatabase::new("traces_console");
    let collector = Collector::default();
    let endpoint = collector.start();
    let server = start(&database.arg(), &endpoint);
    server.create_category(ADMIN, "Dogs");

    let signed_in = binary::exchange(
        &server.address,
        "POST",
        "/console/sign-in",
        "",
        &[],
        Some(&format!("key={ADMIN}")),
    )
    .unwrap();
    assert_eq!(signed_in.status, 303, "{}", signed_in.body);
    let cookie = signed_in
        .header("set-cookie")
        .and_then(|value| value.split(';').next())
        .unwrap()
        .to_owned();

    let pages = [
        ("/console/", "page-today"),
        ("/console/pets", "page-pets"),
        ("/console/stock", "page-stock"),
        ("/console/categories", "page-categories"),
        ("/console/orders", "page-orders"),
        ("/console/events", "page-events"),
        ("/console/keys", "page-keys"),
    ];
    for (path, id) in pages {
        let page = server.send(
            "GET",
            path,
            "",
            &[("cookie", &cookie), ("x-request-id", id)],
            None,
        );
        assert_eq!(page.map(|(status, _)| status), Some(200), "{path}");
    }
    let requests: Vec<Exported> = pages
        .iter()
        .map(|(path, id)| {
            collector.span(&format!("{path}'s request span"), |s| {
                s.attribute("petstore.request_id") == Some(id)
            })
        })
        .collect();
    // Stopping sends every span still batched.
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log:#?}");
    let spans = collector.spans.lock().unwrap().clone();
    for ((path, _), request) in pages.iter().zip(&requests) {
        let trips: Vec<&str> = spans
            .iter()
            .filter(|s| s.parent_id == request.span_id && s.name.starts_with("store "))
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(trips, ["store read"], "{path}");
    }
}

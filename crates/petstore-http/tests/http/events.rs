//! The event feed through the real app.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use crate::common;

use actix_web::test::TestRequest;
use futures_util::future::join_all;
use petstore_core::Role;
use serde_json::{Value, json};

use common::start;

fn types(events: &Value) -> Vec<String> {
    events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

#[actix_web::test]
async fn each_change_shows_its_events_in_the_feed_as_cloudevents() {
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 1).await;
    let all = api.get("/v1/events").await;
    assert_eq!(
        types(&all.body),
        ["category.created", "pet.created", "inventory.updated"]
    );
    let first = &all.body[0];
    assert_eq!(first["specversion"], "1.0");
    assert_eq!(first["id"], "1");
    assert_eq!(first["source"], "/v1");
    assert_eq!(first["subject"], "categories/1");
    assert_eq!(first["datacontenttype"], "application/json");
    assert_eq!(first["data"], json!({"id": 1, "name": "Rex kind"}));
    assert!(first["time"].as_str().unwrap().ends_with('Z'));

    let order = api.post("/v1/store/orders", json!({"petId": pet})).await;
    let after = api.get("/v1/events?after=3").await;
    assert_eq!(
        types(&after.body),
        ["order.placed", "pet.status_changed", "inventory.updated"]
    );
    assert_eq!(
        after.body[0]["subject"],
        format!("store/orders/{}", order.body["id"])
    );
    assert_eq!(
        after.body[1]["data"],
        json!({"petId": pet, "from": "available", "to": "pending"})
    );

    // A refused change records nothing.
    api.post("/v1/store/orders", json!({"petId": pet}))
        .await
        .assert_error(409, "insufficient_stock");
    assert_eq!(api.get("/v1/events?after=6").await.body, json!([]));
    assert_eq!(
        api.get("/v1/events?after=0").await.body,
        all.body
            .as_array()
            .unwrap()
            .iter()
            .chain(after.body.as_array().unwrap())
            .cloned()
            .collect::<Value>()
    );

    api.get("/v1/events?after=abc")
        .await
        .assert_error(400, "invalid_parameter");
    api.get("/v1/events?after=-1")
        .await
        .assert_error(400, "invalid_parameter");
    let customer = api.key(Role::Customer, 1).await;
    api.send_as(Some(&customer), TestRequest::get().uri("/v1/events"))
        .await
        .assert_error(403, "forbidden");
}

/// A follower paging through the feed while changes keep coming sees every event exactly once,
/// in order.
#[actix_web::test]
async fn the_feed_pages_without_gaps_or_duplicates_while_writes_continue() {
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 1000).await;
    let mut seen: Vec<i64> = Vec::new();
    let mut next = "/v1/events?limit=7".to_owned();
    for _ in 0..20 {
        // Writes and a page read, at once.
        let writes = (0..5).map(|_| api.post("/v1/store/orders", json!({"petId": pet})));
        let (page, _) = futures_util::future::join(api.get(&next), join_all(writes)).await;
        for event in page.body.as_array().unwrap() {
            seen.push(event["id"].as_str().unwrap().parse().unwrap());
        }
        next = match (page.next_link(), seen.last()) {
            (Some(link), _) => link,
            // A short page: poll after the last event seen, as a follower does.
            (None, Some(last)) => format!("/v1/events?after={last}&limit=7"),
            (None, None) => next,
        };
    }
    // Catch up with what is left.
    loop {
        let page = api.get(&next).await;
        let events = page.body.as_array().unwrap().clone();
        seen.extend(
            events
                .iter()
                .map(|e| e["id"].as_str().unwrap().parse::<i64>().unwrap()),
        );
        match page.next_link() {
            Some(link) => next = link,
            None => break,
        }
    }
    let expected: Vec<i64> = (1..=seen.len() as i64).collect();
    assert_eq!(seen, expected, "every event once, in order, no gap");
    // 3 setup events, then per order: order.placed and inventory.updated.
    assert_eq!(seen.len(), 3 + 100 * 2);
}

//! Many orders racing for the last units of a pet never oversell, on a real database file.

use crate::common;

use petstore_core::testkit::scenarios::racing_orders_never_oversell;

/// 32 threads race for 10 units; repeated on fresh databases, because a race that is lost
/// only sometimes is the kind of bug one run does not show.
#[test]
fn thirty_two_racers_for_ten_units_repeatedly() {
    for _ in 0..25 {
        racing_orders_never_oversell(common::TempStore::new());
    }
}

/// The same on PostgreSQL, where 32 connections really write at once: the pet's row lock is
/// what keeps them from both selling the last unit.
#[test]
fn thirty_two_racers_for_ten_units_repeatedly_on_postgres() {
    if !petstore_store::testing::postgres_configured() {
        return;
    }
    for _ in 0..10 {
        racing_orders_never_oversell(common::TempPgStore::with(|config| config.readers = 32));
    }
}

/// On PostgreSQL, transactions record events without taking turns, so a later one may commit
/// first. The feed shows events in the order they committed: a follower that read it while
/// an earlier transaction still ran finds that transaction's event after its cursor once it
/// commits, never below it.
#[test]
fn events_join_the_feed_in_commit_order_on_postgres() {
    use std::sync::mpsc;

    use chrono::Utc;
    use petstore_core::{CategoryId, DomainEvent, EventId, Store};

    if !petstore_store::testing::postgres_configured() {
        return;
    }
    let shop = common::TempPgStore::new();
    let record = |tx: &mut dyn petstore_core::Transaction, id: i64| {
        let id = CategoryId::new(id).unwrap();
        tx.append_events(
            Utc::now(),
            &petstore_core::Cause::default(),
            &[DomainEvent::CategoryDeleted(id)],
        )
    };
    let feed = |after: Option<EventId>| {
        shop.store
            .read_one(|s| s.events_after(after, 100))
            .unwrap()
            .iter()
            .map(|e| (e.id, e.subject.clone()))
            .collect::<Vec<_>>()
    };
    shop.store.write(|tx| record(tx, 1)).unwrap();
    let (appended, release) = (mpsc::channel(), mpsc::channel::<()>());
    let during = std::thread::scope(|threads| {
        let slow = threads.spawn(|| {
            let (appended, release) = (appended.0, release.1);
            shop.store
                .write(|tx| {
                    record(tx, 2)?;
                    appended.send(()).unwrap();
                    release.recv().unwrap();
                    Ok(())
                })
                .unwrap();
        });
        appended.1.recv().unwrap();
        // A transaction that began after the slow one, committed while it still runs.
        shop.store.write(|tx| record(tx, 3)).unwrap();
        let during = feed(None);
        release.0.send(()).unwrap();
        slow.join().unwrap();
        during
    });
    let subjects =
        |events: &[(EventId, String)]| events.iter().map(|(_, s)| s.clone()).collect::<Vec<_>>();
    assert_eq!(subjects(&during), ["categories/1", "categories/3"]);
    let cursor = during.last().map(|(id, _)| *id);
    let later = feed(cursor);
    assert_eq!(
        subjects(&later),
        ["categories/2"],
        "after the follower's cursor"
    );
    let all = feed(None);
    assert_eq!(
        subjects(&all),
        ["categories/1", "categories/3", "categories/2"]
    );
    assert!(all.windows(2).all(|w| w[0].0 < w[1].0), "{all:?}");
    let last = shop.store.read(|s| s.last_event_id()).unwrap();
    assert_eq!(last, all.last().map(|(id, _)| *id));
}

//! Many orders racing for the last units of a pet never oversell, on a real database file.

mod common;

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
/// first. The feed then shows the later event only once the earlier transaction has ended,
/// and below it: a follower that read the feed in between has skipped nothing.
#[test]
fn an_event_of_a_transaction_still_running_holds_back_those_after_it_on_postgres() {
    use std::sync::mpsc;

    use chrono::Utc;
    use petstore_core::{CategoryId, DomainEvent, EventId, Store};

    if !petstore_store::testing::postgres_configured() {
        return;
    }
    let shop = common::TempPgStore::new();
    let record = |tx: &mut dyn petstore_core::Transaction, id: i64| {
        let id = CategoryId::new(id).unwrap();
        tx.append_events(Utc::now(), None, &[DomainEvent::CategoryDeleted(id)])
    };
    let feed = || {
        shop.store
            .read(|s| s.events_after(None, 100))
            .unwrap()
            .iter()
            .map(|e| (e.id.get(), e.subject.clone()))
            .collect::<Vec<_>>()
    };
    record_one(&shop, &record, 1);
    let (appended, release) = (mpsc::channel(), mpsc::channel::<()>());
    std::thread::scope(|threads| {
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
        record_one(&shop, &record, 3);
        let during = feed();
        assert_eq!(
            during.len(),
            1,
            "only what precedes every running transaction: {during:?}"
        );
        let last = shop.store.read(|s| s.last_event_id()).unwrap();
        assert_eq!(last, Some(EventId::new(during[0].0).unwrap()));
        release.0.send(()).unwrap();
        slow.join().unwrap();
    });
    let after = feed();
    let subjects: Vec<&str> = after.iter().map(|(_, s)| s.as_str()).collect();
    assert_eq!(
        subjects,
        ["categories/1", "categories/2", "categories/3"],
        "{after:?}"
    );
    assert!(after.windows(2).all(|w| w[0].0 < w[1].0), "{after:?}");
}

fn record_one(
    shop: &common::TempPgStore,
    record: &dyn Fn(&mut dyn petstore_core::Transaction, i64) -> petstore_core::RepoResult<()>,
    id: i64,
) {
    petstore_core::Store::write(&shop.store, |tx| record(tx, id)).unwrap();
}

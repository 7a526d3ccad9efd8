//! The schema refuses what the rules refuse, even when the service's own checks are bypassed,
//! and each database failure maps to the right domain error.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use crate::common;

use std::sync::mpsc;
use std::time::Duration;

use chrono::Utc;
use diesel::connection::SimpleConnection;
use petstore_core::testkit::scenarios::{Fixture, name};
use petstore_core::{
    Caller, CategoryId, DomainError, NewCategory, NewOrder, NewPet, Order, PetId, Quantity, Stock,
    Store,
};
use petstore_store::{JobStore, connect};

fn refusal<T: std::fmt::Debug>(result: Result<T, DomainError>) -> DomainError {
    result.expect_err("the database must refuse this")
}

#[test]
fn category_names_are_unique_in_the_schema_regardless_of_case() {
    let fixture = Fixture::new(common::TempStore::new());
    let store = fixture.shop.store();
    let err = refusal(store.write(|tx| tx.insert_category(&NewCategory::new(name("dOGS")))));
    assert_eq!(
        err,
        DomainError::CategoryExists {
            name: "dOGS".into()
        }
    );
}

#[test]
fn pets_need_a_category_in_the_schema() {
    let fixture = Fixture::new(common::TempStore::new());
    let store = fixture.shop.store();
    let nowhere = CategoryId::new(404).unwrap();
    let err = refusal(store.write(|tx| tx.insert_pet(&NewPet::new(name("Rex"), nowhere))));
    assert_eq!(err, DomainError::UnknownCategory { id: nowhere });
}

#[test]
fn a_category_with_pets_cannot_be_deleted_in_the_schema() {
    let fixture = Fixture::new(common::TempStore::new());
    fixture.pet_with_stock("Rex", 0);
    let store = fixture.shop.store();
    let err = refusal(store.write(|tx| tx.delete_category(fixture.dogs)));
    assert_eq!(err, DomainError::CategoryInUse { id: fixture.dogs });
}

#[test]
fn open_orders_keep_their_pet_and_complete_orders_stay_complete() {
    let fixture = Fixture::new(common::TempStore::new());
    let rex = fixture.pet_with_stock("Rex", 3);
    let order = fixture.order(rex.id, 1).unwrap();
    let store = fixture.shop.store();

    let err = refusal(store.write(|tx| tx.delete_pet(rex.id)));
    assert_eq!(err, DomainError::PetHasOpenOrders { id: rex.id });

    let ghost = PetId::new(999).unwrap();
    let err = refusal(
        store.write(|tx| tx.insert_order(&NewOrder::new(ghost, Quantity::ONE), None, None)),
    );
    assert_eq!(err, DomainError::UnknownPet { id: ghost });

    let complete = fixture.complete(order.id);
    let reopened = Order {
        complete: false,
        ..complete.clone()
    };
    let err = refusal(store.write(|tx| tx.update_order(&reopened)));
    assert_eq!(err.code(), "invalid_transition");
    let err = refusal(store.write(|tx| tx.delete_order(complete.id)));
    assert_eq!(err, DomainError::OrderNotCancellable { id: complete.id });
}

#[test]
fn stock_cannot_go_negative_in_the_schema() {
    let store = common::TempStore::new();
    let fixture = Fixture::new(&store);
    let rex = fixture.pet_with_stock("Rex", 1);
    let mut conn = connect(&store.config).unwrap();
    let result = conn.batch_execute(&format!("UPDATE pets SET stock = -1 WHERE id = {}", rex.id));
    assert!(result.is_err(), "CHECK (stock >= 0)");
    let result = conn.batch_execute(&format!(
        "UPDATE pets SET status = 'lost' WHERE id = {}",
        rex.id
    ));
    assert!(result.is_err(), "CHECK on status");
    assert_eq!(fixture.state_of(rex.id).1, 1);
}

#[test]
fn a_failed_write_leaves_nothing_behind() {
    let fixture = Fixture::new(common::TempStore::new());
    let store = fixture.shop.store();
    let events = fixture.event_count();
    // The first insert succeeds inside the transaction, the second is refused: both vanish.
    let err = refusal(store.write(|tx| {
        tx.insert_category(&NewCategory::new(name("Birds")))?;
        tx.append_events(Utc::now(), &petstore_core::Cause::default(), &[])?;
        tx.insert_category(&NewCategory::new(name("BIRDS")))
    }));
    assert_eq!(err.code(), "category_exists");
    let categories = store.read(|s| s.category_named(&name("birds"))).unwrap();
    assert_eq!(categories, None);
    assert_eq!(fixture.event_count(), events);
}

#[test]
fn a_write_locked_by_another_process_is_unavailable_not_an_error() {
    let store = common::TempStore::with(|c| c.busy_timeout = Duration::from_millis(50));
    let fixture = Fixture::new(&store);
    let mut other = connect(&store.config).unwrap();
    other.batch_execute("BEGIN IMMEDIATE").unwrap();
    let err = fixture
        .shop
        .pets()
        .create(
            Caller::Operator,
            NewPet::new(name("Rex"), fixture.dogs),
            None,
        )
        .unwrap_err();
    assert!(matches!(err, DomainError::Unavailable(_)), "{err:?}");
    other.batch_execute("ROLLBACK").unwrap();
    fixture
        .shop
        .pets()
        .create(
            Caller::Operator,
            NewPet::new(name("Rex"), fixture.dogs),
            None,
        )
        .expect("works once the lock is gone");
}

#[test]
fn no_free_connection_in_time_is_unavailable() {
    let store = common::TempStore::with(|c| {
        c.readers = 1;
        c.connection_timeout = Duration::from_millis(100);
    });
    let (hold, release) = mpsc::channel::<()>();
    let (started, running) = mpsc::channel::<()>();
    let store = &store;
    std::thread::scope(|scope| {
        scope.spawn(move || {
            store
                .read(|_| {
                    started.send(()).unwrap();
                    release.recv().unwrap();
                    Ok(())
                })
                .unwrap();
        });
        running.recv().unwrap();
        let err = store.read(|s| s.pet(PetId::new(1).unwrap())).unwrap_err();
        assert!(matches!(err, DomainError::Unavailable(_)), "{err:?}");
        hold.send(()).unwrap();
    });
    assert_eq!(store.read(|s| s.pet(PetId::new(1).unwrap())).unwrap(), None);
}

#[test]
fn corrupt_rows_are_a_storage_error_not_a_panic() {
    let store = common::TempStore::new();
    let mut conn = connect(&store.config).unwrap();
    conn.batch_execute(
        "INSERT INTO events (time, type, subject, data) VALUES ('yesterday', 'pet.exploded', 'x', '{}')",
    )
    .unwrap();
    let err = store.read(|s| s.events_after(None, 10)).unwrap_err();
    assert!(matches!(err, DomainError::Storage(_)), "{err:?}");
}

#[test]
fn a_pet_row_with_an_unknown_status_is_reported_with_its_row() {
    let store = common::TempStore::new();
    let fixture = Fixture::new(&store);
    let rex = fixture.pet_with_stock("Rex", 1);
    let mut conn = connect(&store.config).unwrap();
    // Past the schema's own check, as an older bug or a hand edit could have written it.
    conn.batch_execute(&format!(
        "PRAGMA ignore_check_constraints = ON; UPDATE pets SET status = 'lost' WHERE id = {}",
        rex.id
    ))
    .unwrap();
    for err in [
        store.read(|s| s.pet(rex.id)).unwrap_err(),
        store.read(|s| s.inventory_item(rex.id)).unwrap_err(),
        store
            .read(|s| s.pets(&petstore_core::PetQuery::default()))
            .unwrap_err(),
    ] {
        let DomainError::Storage(failure) = &err else {
            panic!("{err:?}")
        };
        let text = failure.to_string();
        assert!(text.contains(&format!("pets row {}", rex.id)), "{text}");
        assert!(text.contains("status"), "{text}");
    }
}

#[test]
fn the_open_order_counter_matches_the_orders_whoever_writes_them() {
    use diesel::prelude::*;
    use diesel::sql_types::BigInt;
    #[derive(QueryableByName)]
    struct Counts {
        #[diesel(sql_type = BigInt)]
        counter: i64,
        #[diesel(sql_type = BigInt)]
        actual: i64,
    }
    let store = common::TempStore::new();
    let fixture = Fixture::new(&store);
    let rex = fixture.pet_with_stock("Rex", 10);
    let orders: Vec<_> = (0..4).map(|_| fixture.order(rex.id, 1).unwrap()).collect();
    fixture.complete(orders[0].id);
    fixture
        .shop
        .orders()
        .cancel(Caller::Operator, orders[1].id, petstore_core::Always)
        .unwrap();

    let mut conn = connect(&store.config).unwrap();
    conn.batch_execute(&format!(
        "INSERT INTO orders (pet_id, quantity) VALUES ({0}, 1), ({0}, 2); \
         UPDATE orders SET complete = 1 WHERE id = {1}; \
         DELETE FROM orders WHERE id = (SELECT max(id) FROM orders);",
        rex.id, orders[2].id
    ))
    .unwrap();
    let counts = diesel::sql_query(format!(
        "SELECT open_orders AS counter, \
         (SELECT count(*) FROM orders WHERE pet_id = {0} AND complete = 0) AS actual \
         FROM pets WHERE id = {0}",
        rex.id
    ))
    .get_result::<Counts>(&mut conn)
    .unwrap();
    assert_eq!((counts.counter, counts.actual), (2, 2));
    let seen = store.read(|s| s.open_order_count(rex.id)).unwrap();
    assert_eq!(seen, 2);
}

#[test]
fn reads_sharing_a_burst_see_one_snapshot_and_a_failure_or_the_next_burst_a_new_one() {
    let fixture = Fixture::new(common::TempStore::new());
    let rex = fixture.pet_with_stock("Rex", 10);
    let sqlite = fixture.shop.store().store.clone();
    let executor = common::HeldExecutor::start(&sqlite);
    let (answer, answered) = mpsc::channel();
    executor.executor.read(
        None,
        move |store: JobStore<'_>| {
            let stock = || {
                let item = store.read(|s| s.inventory_item(rex.id)).unwrap();
                item.unwrap().quantity.get()
            };
            let set = |n: u32| {
                petstore_core::Service::new(store)
                    .inventory()
                    .set_stock(
                        Caller::Operator,
                        rex.id,
                        Stock::from_level(n),
                        petstore_core::Always,
                    )
                    .unwrap();
            };
            let first = stock();
            set(7);
            let second = stock();
            // A failed read ends the shared transaction: the next one takes a new snapshot.
            let failed = store.read(|_| -> petstore_core::RepoResult<()> {
                Err(DomainError::Storage(petstore_core::Failure::new(
                    "a read that failed",
                )))
            });
            assert!(failed.is_err());
            let third = stock();
            set(5);
            Ok((first, second, third))
        },
        move |seen| {
            let _ = answer.send(seen);
        },
    );
    executor.wake();
    let seen = common::answer_of(&answered).unwrap();
    assert_eq!(seen, Ok((10, 10, 7)));
    let after = sqlite.read(|s| s.inventory_item(rex.id)).unwrap().unwrap();
    assert_eq!(
        after.quantity.get(),
        5,
        "the next read, after the burst, sees the last write"
    );
    // The pool counts a connection it is still opening in the background (to keep its idle
    // minimum) as open and not idle: wait for those, not for the burst's, which is back by now
    // or never.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let mut idle = sqlite.pool_state();
    while idle.connections != idle.idle && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        idle = sqlite.pool_state();
    }
    assert_eq!(
        idle.connections, idle.idle,
        "the burst gave its connection back"
    );
}

/// `read_one` runs outside a transaction on PostgreSQL, so two statements there would see two
/// states: work of two statements given to it fails every test that runs it (debug builds).
#[test]
fn a_read_one_of_two_statements_fails_the_tests_on_postgres() {
    if !petstore_store::testing::postgres_configured() {
        return;
    }
    let shop = common::TempPgStore::new();
    assert!(shop.store.read_one(|s| s.last_event_id()).is_ok());
    let two = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        shop.store.read_one(|s| {
            s.last_event_id()?;
            s.last_event_id()
        })
    }));
    assert!(two.is_err(), "two statements in a read_one must not pass");
}

/// Every statement sent while [`RECORDING`] is on, as Diesel shows them.
static STATEMENTS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

thread_local! {
    /// Whether this thread's statements are recorded: only the test's own, not those of the
    /// tests running beside it in this binary.
    static RECORDING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The rule of `sqlite/limit.rs`: on SQLite a page's `LIMIT` is written into the statement's
/// text, never bound (SQLite plans a statement with a bound `LIMIT ?` again on every run). Every
/// list the store serves runs here, at the default page size and another, while every
/// statement is recorded: each SQLite statement that reads a page must end in `LIMIT <n>`.
/// A list written with Diesel's `.limit(n)` fails it.
#[test]
fn every_page_read_on_sqlite_ends_in_a_literal_limit() {
    use diesel::connection::{Instrumentation, InstrumentationEvent, set_default_instrumentation};
    use petstore_core::{
        CategoryQuery, DeliveryQuery, InventoryQuery, KeyQuery, OrderQuery, PageSize, PetQuery,
        WebhookId, WebhookQuery,
    };

    fn record() -> Option<Box<dyn Instrumentation>> {
        Some(Box::new(|event: InstrumentationEvent<'_>| {
            if let InstrumentationEvent::StartQuery { query, .. } = event
                && RECORDING.get()
            {
                STATEMENTS.lock().unwrap().push(query.to_string());
            }
        }))
    }
    set_default_instrumentation(record).unwrap();
    let shop = common::TempStore::new();
    // A store reads on the calling thread: what this thread sends from here on is the store's.
    RECORDING.set(true);
    for limit in [PageSize::DEFAULT, PageSize::new(5).unwrap()] {
        shop.store
            .read(|s| {
                s.categories(&CategoryQuery {
                    limit,
                    ..CategoryQuery::default()
                })?;
                s.pets(&PetQuery {
                    limit,
                    ..PetQuery::default()
                })?;
                s.inventory(&InventoryQuery {
                    limit,
                    ..InventoryQuery::default()
                })?;
                s.orders(&OrderQuery {
                    limit,
                    ..OrderQuery::default()
                })?;
                s.keys(&KeyQuery {
                    limit,
                    ..KeyQuery::default()
                })?;
                s.webhooks(&WebhookQuery {
                    limit,
                    ..WebhookQuery::default()
                })?;
                s.delivery_attempts(
                    WebhookId::new(1).unwrap(),
                    &DeliveryQuery {
                        limit,
                        ..DeliveryQuery::default()
                    },
                )?;
                s.events_after(None, limit.get())
            })
            .unwrap();
    }
    RECORDING.set(false);
    let statements = STATEMENTS.lock().unwrap().clone();
    let pages: Vec<&String> = statements
        .iter()
        .filter(|sql| sql.contains("ORDER BY"))
        .collect();
    for table in [
        "categories",
        "pets",
        "orders",
        "api_keys",
        "webhooks",
        "webhook_deliveries",
        "events",
    ] {
        let from = format!("FROM `{table}`");
        assert!(
            pages.iter().any(|sql| sql.contains(&from)),
            "a page of {table} was read: {pages:#?}"
        );
    }
    for sql in &pages {
        let text = sql.split(" -- binds:").next().unwrap_or(sql).trim_end();
        let limit = text.rsplit_once(" LIMIT ").map(|(_, n)| n);
        assert!(
            limit.is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
            "a page on SQLite must end in a literal LIMIT: {sql}"
        );
    }
}

/// On PostgreSQL a read is answered by the store's deadline: one no reader thread took by
/// then answers `Unavailable` without running (its caller has had its answer), and one taken
/// in time runs.
#[test]
fn a_read_no_thread_took_by_the_deadline_answers_unavailable_without_running() {
    let Some(database) = petstore_store::testing::ScratchPostgres::create() else {
        return;
    };
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (answer, answered) = mpsc::channel();
    let mut executors = Vec::new();
    for (name, deadline) in [
        // Already passed when any thread takes it, however soon.
        ("late", Duration::ZERO),
        ("in time", Duration::from_secs(60)),
    ] {
        let mut config = database.config();
        config.deadline = deadline;
        let store = petstore_store::AnyStore::open(&config).unwrap();
        let executor = common::HeldExecutor::start_any(&store);
        let ran = std::sync::Arc::clone(&ran);
        let answer = answer.clone();
        executor.executor.read(
            None,
            move |store: JobStore<'_>| {
                ran.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                store.read(|s| s.categories(&petstore_core::CategoryQuery::default()))
            },
            move |result| {
                let _ = answer.send((name, result));
            },
        );
        executors.push(executor);
    }
    for executor in &executors {
        executor.wake();
    }
    let mut answers: Vec<_> = (0..2)
        .map(|_| common::answer_of(&answered).unwrap())
        .collect();
    answers.sort_by_key(|(name, _)| *name);
    let [(_, in_time), (_, late)] = <[_; 2]>::try_from(answers).ok().unwrap();
    assert!(
        matches!(&late, Err(DomainError::Unavailable(failure)) if failure.to_string().contains("not started")),
        "{late:?}"
    );
    assert_eq!(in_time, Ok(Vec::new()));
    assert_eq!(
        ran.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the late read's work never ran"
    );
}

//! What a write burst holds back and how it sends it (`held_back.rs`).

use std::sync::mpsc;

use chrono::Utc;
use diesel::prelude::*;
use diesel::sql_types::BigInt;
use petstore_core::{
    Caller, DomainEvent, IdempotencyKey, Idempotent, KeyId, NewOrder, Order, Outcome, PetId,
    Quantity, RepoResult, Role, Service, Stock, Store,
};

use crate::job::{JobStore, WriteJob};
use crate::postgres::PgStore;
use crate::postgres::burst::run_writes;
use crate::postgres::tests::{pet_write, statements, stock_of, store_with_pets};
use crate::{KeyName, Row};

/// A write job that places a one-unit order for `pet` as the use case does (the pet's stock
/// read, the order inserted, the stock set, the event appended), answering with the order.
fn place_one(pet: PetId, answer: &mpsc::Sender<RepoResult<Order>>) -> WriteJob {
    pet_write(pet, answer, move |tx| {
        let left = tx.inventory_item(pet)?.unwrap().quantity.get() - 1;
        let order = tx.insert_order(&NewOrder::new(pet, Quantity::ONE), None, None)?;
        tx.set_stock(pet, Stock::from_level(left))?;
        tx.append_events(
            Utc::now(),
            &petstore_core::Cause::default(),
            &[DomainEvent::OrderPlaced(order.clone())],
        )?;
        Ok(order)
    })
}

/// `(id, pet_id)` of every order, and the subjects of the events (stamped, then pending), read
/// anew.
fn orders_and_events(store: &PgStore) -> (Vec<(i64, i64)>, Vec<String>) {
    let mut conn = store.pool.get().unwrap();
    let orders = diesel::sql_query("SELECT id, pet_id FROM orders ORDER BY id")
        .load::<OrderRow>(&mut conn.conn)
        .unwrap()
        .into_iter()
        .map(|row| (row.id, row.pet_id))
        .collect();
    let events = diesel::sql_query(
        "SELECT subject FROM (SELECT 0 AS part, id AS n, subject FROM events \
         UNION ALL SELECT 1, seq, subject FROM pending_events) e ORDER BY part, n",
    )
    .load::<EventRow>(&mut conn.conn)
    .unwrap()
    .into_iter()
    .map(|row| row.subject)
    .collect();
    (orders, events)
}

#[derive(QueryableByName)]
struct OrderRow {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = BigInt)]
    pet_id: i64,
}

#[derive(QueryableByName)]
struct EventRow {
    #[diesel(sql_type = diesel::sql_types::Text)]
    subject: String,
}

/// Four orders for four pets send their writes in two statements, not three each; each
/// answer's id is the id its order was stored under, and every write lands once.
#[test]
fn a_burst_of_orders_sends_its_writes_in_two_statements() {
    let Some((_database, store, pets)) = store_with_pets(4) else {
        return;
    };
    let (answer, answered) = mpsc::channel();
    let jobs = pets.iter().map(|&pet| place_one(pet, &answer)).collect();
    statements::sent();
    run_writes(&store, jobs);
    let sent = statements::sent();
    let writes: Vec<&String> = sent
        .iter()
        .filter(|sql| sql.contains("INSERT") || sql.starts_with("UPDATE"))
        .collect();
    assert_eq!(
        writes.len(),
        2,
        "two statements for the burst's writes: {sent:?}"
    );
    assert!(
        writes[0].starts_with("UPDATE pets SET stock = coalesce(v.stock, pets.stock)"),
        "{}",
        writes[0]
    );
    assert!(
        writes[1].starts_with("WITH placed AS (INSERT INTO orders"),
        "{}",
        writes[1]
    );

    let placed: Vec<Order> = answered.try_iter().map(Result::unwrap).collect();
    let answered: Vec<(i64, i64)> = placed
        .iter()
        .map(|order| (order.id.get(), order.pet_id.get()))
        .collect();
    let (stored, events) = orders_and_events(&store);
    assert_eq!(
        stored, answered,
        "each order stored under the id it was answered with"
    );
    let expected: Vec<String> = placed
        .iter()
        .map(|order| format!("store/orders/{}", order.id.get()))
        .collect();
    assert_eq!(
        events, expected,
        "the events, in the order they were appended"
    );
    assert_eq!(stock_of(&store, &pets), [0, 1, 2, 3]);
}

/// A statement made after a held-back write sees it: a job that reads the orders after an
/// earlier job of the burst placed one counts it.
#[test]
fn a_statement_after_a_held_back_write_sees_it() {
    let Some((_database, store, pets)) = store_with_pets(2) else {
        return;
    };
    let (answer, answered) = mpsc::channel();
    let (counted, count) = mpsc::channel();
    let first = pets[0];
    let count_orders = WriteJob::new(
        Some(Row::Pet(pets[1])),
        move |store: JobStore<'_>| store.write(|tx| tx.open_order_count(first)),
        move |result| counted.send(result.unwrap()).unwrap(),
    );
    run_writes(&store, vec![place_one(first, &answer), count_orders]);
    assert_eq!(
        answered.try_iter().map(Result::unwrap).count(),
        1,
        "the order placed"
    );
    assert_eq!(count.try_iter().collect::<Vec<_>>(), [1]);
}

/// A held-back write that fails when sent (a stock set for a pet that does not exist, made
/// without reading it) is no one job's: the burst gives up, each job runs again alone, the
/// failing one is answered its own error and the others land once.
#[test]
fn a_held_back_write_that_fails_when_sent_runs_each_job_again_alone() {
    let Some((_database, store, pets)) = store_with_pets(2) else {
        return;
    };
    let (answer, answered) = mpsc::channel();
    let (refused, refusal) = mpsc::channel();
    let missing = PetId::new(pets[1].get() + 1_000).unwrap();
    let set_missing = WriteJob::new(
        None,
        move |store: JobStore<'_>| store.write(|tx| tx.set_stock(missing, Stock::from_level(3))),
        move |result| refused.send(result).unwrap(),
    );
    let jobs = vec![
        place_one(pets[0], &answer),
        set_missing,
        place_one(pets[1], &answer),
    ];
    run_writes(&store, jobs);
    assert_eq!(store.writer_stats().reruns, 1, "the burst gave up once");
    assert!(
        refusal.try_recv().unwrap().is_err(),
        "the stock set for no pet failed"
    );
    let placed: Vec<Order> = answered.try_iter().map(Result::unwrap).collect();
    assert_eq!(placed.len(), 2);
    let (stored, events) = orders_and_events(&store);
    assert_eq!(stored.len(), 2, "each order stored once: {stored:?}");
    assert_eq!(
        events.len(),
        2,
        "each order's event stored once: {events:?}"
    );
    assert_eq!(stock_of(&store, &pets), [0, 1]);
}

/// A job placing a one-unit order for `pet` through the use case, once per idempotency key
/// `key` of key holder 1, naming both; it answers what the use case did.
fn place_keyed(
    pet: PetId,
    key: &str,
    answer: &mpsc::Sender<RepoResult<Outcome<Order>>>,
) -> WriteJob {
    let answer = answer.clone();
    let idempotency =
        IdempotencyKey::new(key, "POST", "/v1/store/orders", pet.to_string().as_bytes()).unwrap();
    let caller = Caller::Key {
        id: KeyId::new(1).unwrap(),
        role: Role::Customer,
    };
    let name = KeyName {
        owner: caller.owner().unwrap(),
        key: key.to_owned(),
    };
    WriteJob::new(
        Some(Row::Pet(pet)),
        move |store: JobStore<'_>| {
            let record = |order: &Order| order.id.to_string().into_bytes();
            let once = Idempotent {
                key: idempotency.clone(),
                record: &record,
            };
            Service::new(store).orders().place(
                caller,
                NewOrder::new(pet, Quantity::ONE),
                Some(once),
            )
        },
        move |result| answer.send(result).unwrap(),
    )
    .naming_key(Some(name))
}

/// The statements a burst of keyed orders for `pets` sends, and what each job answered.
fn keyed_burst(
    store: &PgStore,
    pets: &[PetId],
    keys: &[String],
) -> (Vec<String>, Vec<Outcome<Order>>) {
    let (answer, answered) = mpsc::channel();
    let jobs = pets
        .iter()
        .zip(keys)
        .map(|(&pet, key)| place_keyed(pet, key, &answer))
        .collect();
    statements::sent();
    run_writes(store, jobs);
    let sent = statements::sent();
    (sent, answered.try_iter().map(Result::unwrap).collect())
}

/// A burst of keyed orders looks its keys up in the statement that locks its pets and writes
/// their records with its orders and events: five statements (`BEGIN`, the pets locked and
/// the keys looked up, the stock, the orders, records and events, `COMMIT`) for two orders or
/// eight, as many as without keys. Sent again, the same keys replay every answer and write
/// nothing.
#[test]
fn a_burst_of_keyed_orders_sends_as_many_statements_for_eight_as_for_two() {
    let Some((_database, store, pets)) = store_with_pets(11) else {
        return;
    };
    // Pets with a unit left over, so that no order changes a pet's status.
    let pets = &pets[1..];
    let keys: Vec<String> = (0..10).map(|n| format!("order-{n}")).collect();
    let (two, placed_two) = keyed_burst(&store, &pets[..2], &keys[..2]);
    let (eight, placed_eight) = keyed_burst(&store, &pets[2..], &keys[2..]);
    assert_eq!(two.len(), 5, "{two:?}");
    assert_eq!(eight.len(), two.len(), "{eight:?}");
    assert!(
        eight.iter().all(|sql| !sql.contains("pg_advisory")),
        "no lock per key: {eight:?}"
    );
    let placed: Vec<&Outcome<Order>> = placed_two.iter().chain(&placed_eight).collect();
    assert!(
        placed.iter().all(|o| matches!(o, Outcome::Done(_))),
        "{placed:?}"
    );
    let (orders, _) = orders_and_events(&store);
    assert_eq!(orders.len(), 10);

    let (again, replayed) = keyed_burst(&store, &pets[2..], &keys[2..]);
    let answers: Vec<Vec<u8>> = placed_eight
        .iter()
        .map(|o| match o {
            Outcome::Done(order) => order.id.to_string().into_bytes(),
            Outcome::Replayed(bytes) => bytes.clone(),
        })
        .collect();
    assert_eq!(
        replayed,
        answers
            .into_iter()
            .map(Outcome::Replayed)
            .collect::<Vec<_>>(),
        "every answer replayed, in order"
    );
    assert!(
        again
            .iter()
            .all(|sql| !sql.contains("INSERT") && !sql.starts_with("UPDATE")),
        "a replay writes nothing: {again:?}"
    );
    assert_eq!(
        orders_and_events(&store).0.len(),
        10,
        "no order placed again"
    );
}

/// Two jobs of one burst with the same key (a client's retry that overtook its first try):
/// one order, and the second answered with the first's record.
#[test]
fn a_key_sent_twice_in_one_burst_places_one_order() {
    let Some((_database, store, pets)) = store_with_pets(2) else {
        return;
    };
    let key = "twice".to_owned();
    let (_, outcomes) = keyed_burst(&store, &[pets[0], pets[0]], &[key.clone(), key]);
    let Outcome::Done(order) = &outcomes[0] else {
        panic!("the first placed the order: {outcomes:?}");
    };
    assert_eq!(
        outcomes[1],
        Outcome::Replayed(order.id.to_string().into_bytes())
    );
    assert_eq!(orders_and_events(&store).0.len(), 1);
}

/// A key recorded by another transaction after the burst looked it up (committed while the
/// burst ran): the burst cannot write its record, gives up, and its jobs run alone, where the
/// create finds the record and replays it. No second order.
#[test]
fn a_key_recorded_meanwhile_by_another_transaction_replays_it() {
    let Some((_database, store, pets)) = store_with_pets(3) else {
        return;
    };
    let (answer, answered) = mpsc::channel();
    let elsewhere = store.clone();
    let pet = pets[2];
    // The first job of the burst places the same order with the same key on another
    // connection, and commits, once the burst has looked the key up.
    let racer = WriteJob::new(
        Some(Row::Pet(pets[0])),
        move |_store: JobStore<'_>| {
            let (inner, placed) = mpsc::channel();
            run_writes(&elsewhere, vec![place_keyed(pet, "raced", &inner)]);
            Ok(placed.recv().unwrap().map(|_| ()))
        },
        |_: RepoResult<RepoResult<()>>| {},
    );
    // Its pet not named, so not locked by the burst before the racer orders it.
    let mut second = place_keyed(pet, "raced", &answer);
    second.rows.clear();
    run_writes(&store, vec![racer, second]);
    assert_eq!(store.writer_stats().reruns, 1, "the burst gave up once");
    let outcomes: Vec<Outcome<Order>> = answered.try_iter().map(Result::unwrap).collect();
    let (orders, _) = orders_and_events(&store);
    assert_eq!(orders.len(), 1, "one order for the key: {orders:?}");
    assert!(
        outcomes.iter().any(|o| matches!(o, Outcome::Replayed(_))),
        "the burst's create replayed the other's record: {outcomes:?}"
    );
}

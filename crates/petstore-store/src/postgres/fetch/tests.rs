//! What a write burst does with the pets its jobs name (`burst.rs`, [`lock_and_look_up`]).

use std::sync::mpsc;
use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection};
use petstore_core::{PetId, RepoResult, Stock, Store};

use crate::Row;
use crate::job::{JobStore, WriteJob};
use crate::postgres::burst::run_writes;
use crate::postgres::tests::{pet_write, statements, stock_of, store_with_pets};

/// A write job naming `pet` that takes one unit of its stock, as an order does (the pet's row
/// read, locked, then written); it answers with the level it left.
fn take_one(pet: PetId, answer: &mpsc::Sender<RepoResult<u32>>) -> WriteJob {
    pet_write(pet, answer, move |tx| {
        let left = tx.inventory_item(pet)?.unwrap().quantity.get() - 1;
        tx.set_stock(pet, Stock::from_level(left))?;
        Ok(left)
    })
}

/// The statements in `sent` that read pets' rows.
fn pet_reads(sent: &[String]) -> Vec<&String> {
    sent.iter()
        .filter(|sql| {
            (sql.starts_with("SELECT") && sql.contains(r#"FROM "pets""#))
                || sql.contains("FROM pets WHERE")
        })
        .collect()
}

/// A burst of orders for different pets locks and reads their rows in one statement, in id
/// order, where each order would read its own.
#[test]
fn a_burst_of_orders_locks_and_reads_their_pets_in_one_statement() {
    let Some((_database, store, pets)) = store_with_pets(4) else {
        return;
    };
    let (answer, answered) = mpsc::channel();
    let jobs = pets
        .iter()
        .rev()
        .map(|&pet| take_one(pet, &answer))
        .collect();
    statements::sent();
    run_writes(&store, jobs);
    let sent = statements::sent();
    let reads = pet_reads(&sent);
    assert_eq!(reads.len(), 1, "one read of the pets' rows: {sent:?}");
    assert!(reads[0].contains("FOR UPDATE SKIP LOCKED"), "{}", reads[0]);
    assert!(reads[0].contains("ORDER BY id"), "{}", reads[0]);
    let mut left: Vec<u32> = answered.try_iter().map(Result::unwrap).collect();
    left.sort_unstable();
    assert_eq!(left, [0, 1, 2, 3]);
    assert_eq!(stock_of(&store, &pets), [0, 1, 2, 3]);
}

/// A row the burst fetched is served once, and forgotten when a write of the burst changes
/// it: a later job for the same pet reads what the earlier one left, not what was fetched.
#[test]
fn a_pet_an_earlier_write_of_the_burst_changed_is_read_again() {
    let Some((_database, store, pets)) = store_with_pets(4) else {
        return;
    };
    let (two, four) = (pets[1], pets[3]);
    let (answer, answered) = mpsc::channel();
    let set_two = WriteJob::new(
        Some(Row::Pet(two)),
        move |store: JobStore<'_>| store.write(|tx| tx.set_stock(two, Stock::from_level(7))),
        |result| result.unwrap(),
    );
    let jobs = vec![
        take_one(four, &answer),
        set_two,
        take_one(two, &answer),
        take_one(four, &answer),
    ];
    run_writes(&store, jobs);
    let left: Vec<u32> = answered.try_iter().map(Result::unwrap).collect();
    assert_eq!(left, [3, 6, 2], "each job saw the one before it");
    assert_eq!(stock_of(&store, &[two, four]), [6, 2]);
}

/// A pet another transaction holds is skipped by the burst's lock, not waited for; its job
/// meets the lock itself, the burst gives up, and each job runs again alone: every order
/// lands once.
#[test]
fn a_pet_another_transaction_holds_is_left_to_its_job() {
    let Some((database, store, pets)) = store_with_pets(2) else {
        return;
    };
    let mut holder = PgConnection::establish(database.url()).unwrap();
    holder
        .batch_execute(&format!(
            "BEGIN; SELECT 1 FROM pets WHERE id = {} FOR UPDATE",
            pets[1].get()
        ))
        .unwrap();
    let (answer, answered) = mpsc::channel();
    let jobs = vec![take_one(pets[0], &answer), take_one(pets[1], &answer)];
    let writer = store.clone();
    let burst = std::thread::spawn(move || run_writes(&writer, jobs));
    std::thread::sleep(Duration::from_millis(300));
    holder.batch_execute("COMMIT").unwrap();
    burst.join().unwrap();
    let left: Vec<u32> = answered.try_iter().map(Result::unwrap).collect();
    assert_eq!(left, [0, 1]);
    assert_eq!(stock_of(&store, &pets), [0, 1]);
}

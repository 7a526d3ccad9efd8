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
/// is set aside and runs alone after the burst, waiting for the lock, so the burst does not
/// give up: every order lands once.
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
    assert_eq!(store.writer_stats().reruns, 0, "no burst gave up");
    assert_eq!(stock_of(&store, &pets), [0, 1]);
}

/// A write job naming every pet of `lines` that checks them out as the use case does (each
/// pet's row read, locked; whether the ledger has begun asked; one order of all the lines
/// placed; each pet's stock set), answering with the order.
fn check_out(
    lines: Vec<(PetId, u32)>,
    answer: &mpsc::Sender<RepoResult<petstore_core::Order>>,
) -> WriteJob {
    use petstore_core::{PlacedCheckout, PricedLine, Quantity};
    let answer = answer.clone();
    let rows: Vec<Row> = lines.iter().map(|&(pet, _)| Row::Pet(pet)).collect();
    WriteJob::new(
        rows,
        move |store: JobStore<'_>| {
            store.write(|tx| {
                assert!(tx.ledger_open()?, "a new database's ledger has begun");
                let mut priced = Vec::new();
                for &(pet, units) in &lines {
                    let stock = tx.inventory_item(pet)?.unwrap().quantity.get();
                    tx.set_stock(pet, Stock::from_level(stock - units))?;
                    let quantity = Quantity::new(units.into()).unwrap();
                    priced.push(PricedLine {
                        pet_id: pet,
                        quantity,
                        price: None,
                    });
                }
                let first = priced.remove(0);
                tx.insert_checkout(&PlacedCheckout {
                    first,
                    more: priced,
                    ship_date: None,
                    owner: None,
                })
            })
        },
        move |result| answer.send(result).unwrap(),
    )
}

/// A burst of checkouts locks and reads every line's pet in its one statement, which also
/// says whether the ledger has begun, and sends the lines with their orders: no line costs a
/// statement of its own.
#[test]
fn a_burst_of_checkouts_reads_every_lines_pet_at_once_and_holds_its_lines_back() {
    let Some((_database, store, pets)) = store_with_pets(4) else {
        return;
    };
    let (answer, answered) = mpsc::channel();
    let jobs = vec![
        check_out(vec![(pets[3], 1), (pets[0], 1)], &answer),
        check_out(vec![(pets[1], 1), (pets[2], 2)], &answer),
    ];
    statements::sent();
    run_writes(&store, jobs);
    let sent = statements::sent();
    assert_eq!(
        pet_reads(&sent).len(),
        1,
        "one read of the pets' rows: {sent:?}"
    );
    let own: Vec<&String> = sent
        .iter()
        .filter(|sql| sql.contains("order_lines") || sql.contains("ledger_opened"))
        .filter(|sql| !sql.starts_with("WITH"))
        .collect();
    assert!(own.is_empty(), "no statement of a line's own: {own:?}");
    let placed: Vec<petstore_core::Order> = answered.try_iter().map(Result::unwrap).collect();
    assert_eq!(placed.len(), 2);
    for order in placed {
        let stored = store.read(|s| s.order(order.id)).unwrap();
        assert_eq!(stored, Some(order), "each order stored with every line");
    }
    assert_eq!(stock_of(&store, &pets), [0, 1, 1, 3]);
}

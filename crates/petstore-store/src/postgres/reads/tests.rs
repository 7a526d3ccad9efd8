use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};

use diesel::connection::{Instrumentation, InstrumentationEvent};
use petstore_core::{Name, NewCategory, NewPet, PetId, PetStatus, Stock};

use super::*;
use crate::Row;
use crate::testing::ScratchPostgres;

/// A store on a scratch database holding `count` pets, each with a stock equal to its
/// position (1, 2, …); `None` (the test is skipped) when no PostgreSQL server is configured.
fn store_with_pets(count: u32) -> Option<(ScratchPostgres, PgStore, Vec<PetId>)> {
    let database = ScratchPostgres::create()?;
    let store = PgStore::open(&database.config()).unwrap();
    let pets = store
        .write(|tx| {
            let category = tx.insert_category(&NewCategory::new(Name::parse("Dogs").unwrap()))?;
            (1..=count)
                .map(|n| {
                    let pet = tx.insert_pet(&NewPet {
                        name: Name::parse(&format!("Rex {n}")).unwrap(),
                        category_id: category.id,
                        status: PetStatus::Available,
                    })?;
                    tx.set_stock(pet.id, Stock::from_level(n))?;
                    Ok(pet.id)
                })
                .collect()
        })
        .unwrap();
    Some((database, store, pets))
}

/// A connection of `store`'s pool that counts the statements it sends from now on.
fn counting_connection(store: &PgStore) -> (PooledConnection<PrimaryOnly>, Arc<AtomicU64>) {
    let mut conn = store.pool.get().unwrap();
    let sent = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&sent);
    let instrumentation: Box<dyn Instrumentation> =
        Box::new(move |event: InstrumentationEvent<'_>| {
            if matches!(event, InstrumentationEvent::StartQuery { .. }) {
                counter.fetch_add(1, Ordering::Relaxed);
            }
        });
    diesel::Connection::set_instrumentation(&mut conn.conn, instrumentation);
    (conn, sent)
}

/// A point read of `pet`'s stock naming the pet it reads, answering on `answer`.
fn stock_read(pet: PetId, answer: &mpsc::Sender<(PetId, Option<u32>)>) -> ReadJob {
    let answer = answer.clone();
    ReadJob::new(Some(Row::Pet(pet)), move |store| {
        let item = store.read_one(|s| s.inventory_item(pet)).unwrap();
        answer
            .send((pet, item.map(|item| item.quantity.get())))
            .unwrap();
    })
}

/// A burst of point reads that name their pets sends one statement in all, and each read
/// gets what a statement of its own would have: its pet's stock, or nothing for a pet that
/// does not exist. A read of a pet it did not name reads the database itself.
#[test]
fn a_burst_of_point_reads_sends_one_statement() {
    let Some((_database, store, pets)) = store_with_pets(8) else {
        return;
    };
    let (answer, answered) = mpsc::channel();
    let missing = PetId::new(1_000_000).unwrap();
    let mut jobs: Vec<ReadJob> = pets.iter().map(|&pet| stock_read(pet, &answer)).collect();
    jobs.push(stock_read(missing, &answer));
    jobs.push(stock_read(pets[0], &answer));

    let (conn, sent) = counting_connection(&store);
    run_reads_on(&store, conn, jobs);
    assert_eq!(
        sent.load(Ordering::Relaxed),
        1,
        "one statement for 10 reads"
    );
    let mut answers: Vec<_> = answered.try_iter().collect();
    answers.sort();
    let mut expected: Vec<_> = (1..=8).map(|n| (pets[n - 1], Some(n as u32))).collect();
    expected.push((pets[0], Some(1)));
    expected.push((missing, None));
    expected.sort();
    assert_eq!(answers, expected);

    // A read naming one pet and reading another reads that one itself.
    let (other, answered) = mpsc::channel();
    let (conn, sent) = counting_connection(&store);
    let stray = ReadJob::new(Some(Row::Pet(pets[1])), move |store| {
        let item = store.read_one(|s| s.inventory_item(pets[2])).unwrap();
        other.send(item.map(|item| item.quantity.get())).unwrap();
    });
    run_reads_on(&store, conn, vec![stray]);
    assert_eq!(answered.try_recv().unwrap(), Some(3));
    assert_eq!(
        sent.load(Ordering::Relaxed),
        2,
        "the fetch, then its own read"
    );
}

/// A read of several statements runs in a snapshot of its own, not from what was fetched
/// before it: a change committed between the fetch and its snapshot is seen.
#[test]
fn a_read_of_several_statements_uses_nothing_fetched() {
    let Some((_database, store, pets)) = store_with_pets(2) else {
        return;
    };
    let pet = pets[0];
    let (answer, answered) = mpsc::channel();
    let writer = store.clone();
    let jobs = vec![
        ReadJob::new(Some(Row::Pet(pet)), move |_| {
            // Runs after the fetch, before the next read: a write of another client.
            writer
                .write(|tx| tx.set_stock(pet, Stock::from_level(40)))
                .unwrap();
        }),
        ReadJob::new(Some(Row::Pet(pet)), move |store| {
            let item = store.read(|s| s.inventory_item(pet)).unwrap().unwrap();
            answer.send(item.quantity.get()).unwrap();
        }),
    ];
    let (conn, _) = counting_connection(&store);
    run_reads_on(&store, conn, jobs);
    assert_eq!(answered.try_recv().unwrap(), 40);
}

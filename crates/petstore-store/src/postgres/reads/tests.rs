use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use petstore_core::{DomainError, Failure, PetId, Stock};

use diesel::Connection;
use diesel::connection::SimpleConnection;

use super::*;
use crate::Row;
use crate::postgres::tests::{statements, store_with_pets};

/// A point read of `pet`'s stock naming the pet it reads, answering on `answer`.
fn stock_read(pet: PetId, answer: &mpsc::Sender<(PetId, Option<u32>)>) -> ReadJob {
    let answer = answer.clone();
    ReadJob::once(Some(Row::Pet(pet)), move |store| {
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

    statements::sent();
    run_reads(&store, jobs);
    let sent = statements::sent();
    assert_eq!(sent.len(), 1, "one statement for 10 reads: {sent:?}");
    let mut answers: Vec<_> = answered.try_iter().collect();
    answers.sort();
    let mut expected: Vec<_> = (1..=8).map(|n| (pets[n - 1], Some(n as u32))).collect();
    expected.push((pets[0], Some(1)));
    expected.push((missing, None));
    expected.sort();
    assert_eq!(answers, expected);

    // A read naming one pet and reading another reads that one itself.
    let (other, answered) = mpsc::channel();
    let stray = ReadJob::once(Some(Row::Pet(pets[1])), move |store| {
        let item = store.read_one(|s| s.inventory_item(pets[2])).unwrap();
        other.send(item.map(|item| item.quantity.get())).unwrap();
    });
    run_reads(&store, vec![stray]);
    assert_eq!(answered.try_recv().unwrap(), Some(3));
    let sent = statements::sent();
    assert_eq!(sent.len(), 2, "the fetch, then its own read: {sent:?}");
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
        ReadJob::once(Some(Row::Pet(pet)), move |_| {
            // Runs after the fetch, before the next read: a write of another client.
            writer
                .write(|tx| tx.set_stock(pet, Stock::from_level(40)))
                .unwrap();
        }),
        ReadJob::once(Some(Row::Pet(pet)), move |store| {
            let item = store.read(|s| s.inventory_item(pet)).unwrap().unwrap();
            answer.send(item.quantity.get()).unwrap();
        }),
    ];
    run_reads(&store, jobs);
    assert_eq!(answered.try_recv().unwrap(), 40);
}

/// A read whose stamp of the feed is cancelled (another stamper holds the feed's lock past
/// the statement time-out, as a commit waiting for a stalled standby does) fails alone: the
/// transaction its batch began is rolled back, and the next read of the burst, on the same
/// connection, is answered. The soak found connections left in an aborted transaction.
#[test]
fn a_read_whose_stamp_is_cancelled_leaves_its_connection_usable() {
    let Some(database) = crate::testing::ScratchPostgres::create() else {
        return;
    };
    let mut config = database.config();
    config.statement_timeout = std::time::Duration::from_millis(300);
    let store = PgStore::open(&config).unwrap();
    let mut stamper = diesel::PgConnection::establish(database.url()).unwrap();
    stamper
        .batch_execute(
            "INSERT INTO pending_events (time, type, subject, data) \
             VALUES (now(), 'category.created', 'categories/1', '{}')",
        )
        .unwrap();
    stamper
        .batch_execute("BEGIN; SELECT pg_advisory_xact_lock(8099007543883687268)")
        .unwrap();
    let (answer, answered) = mpsc::channel();
    let (first, second) = (answer.clone(), answer);
    let jobs = vec![
        ReadJob::once(None, move |store| {
            first
                .send(store.read(|s| s.last_event_id()).is_ok())
                .unwrap();
        }),
        ReadJob::once(None, move |store| {
            second
                .send(
                    store
                        .read_one(|s| s.categories(&Default::default()))
                        .is_ok(),
                )
                .unwrap();
        }),
    ];
    run_reads(&store, jobs);
    stamper.batch_execute("COMMIT").unwrap();
    let answers: Vec<bool> = answered.try_iter().collect();
    assert_eq!(
        answers,
        [false, true],
        "the stamp timed out; the next read was answered"
    );
}

/// A point read of a fetched pet is answered before a read of several statements queued ahead
/// of it in the same burst: it does not wait behind that read's round trips.
#[test]
fn a_point_read_is_answered_before_a_read_of_several_statements_ahead_of_it() {
    let Some((_database, store, pets)) = store_with_pets(1) else {
        return;
    };
    let pet = pets[0];
    let (order, answered) = mpsc::channel();
    let slow = {
        let order = order.clone();
        ReadJob::once(None, move |store| {
            store
                .read(|s| {
                    s.inventory_item(pet)?;
                    s.inventory_item(pet)
                })
                .unwrap();
            order.send("several statements").unwrap();
        })
    };
    let point = ReadJob::once(Some(Row::Pet(pet)), move |store| {
        store.read_one(|s| s.inventory_item(pet)).unwrap();
        order.send("point read").unwrap();
    });
    run_reads(&store, vec![slow, point]);
    assert_eq!(
        answered.try_iter().collect::<Vec<_>>(),
        ["point read", "several statements"]
    );
}

/// A lane the tests' work never calls.
struct Unused;

impl Lane for Unused {
    fn run_read(&self, _: &mut dyn FnMut(&mut dyn Snapshot) -> RepoResult<()>) -> RepoResult<()> {
        Err(DomainError::Storage(
            "the test's work calls no store".into(),
        ))
    }
    fn run_read_one(
        &self,
        _: &mut dyn FnMut(&mut dyn Snapshot) -> RepoResult<()>,
    ) -> RepoResult<()> {
        Err(DomainError::Storage(
            "the test's work calls no store".into(),
        ))
    }
    fn run_write(
        &self,
        _: &mut dyn FnMut(&mut dyn Transaction) -> RepoResult<()>,
    ) -> RepoResult<()> {
        Err(DomainError::Storage(
            "the test's work calls no store".into(),
        ))
    }
}

/// A read whose first run fails with `first`, and whose later runs answer their number;
/// what it answered, and how often it ran.
fn standby_then_primary(first: DomainError) -> (Vec<RepoResult<usize>>, usize) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let (answer, answered) = mpsc::channel();
    let mut first = Some(first);
    let job = ReadJob::new(
        None,
        move |_| {
            let run = counted.fetch_add(1, Ordering::SeqCst);
            match first.take() {
                Some(failure) => Err(failure),
                None => Ok(run),
            }
        },
        move |result| answer.send(result).unwrap(),
    );
    run_on_standby_or_primary(job, JobStore::over(&Unused), JobStore::over(&Unused));
    (answered.try_iter().collect(), runs.load(Ordering::SeqCst))
}

#[test]
fn a_read_a_standby_failed_under_runs_again_on_the_primary_which_alone_answers() {
    let (answers, runs) =
        standby_then_primary(DomainError::Unavailable(Failure::new("the standby died")));
    assert_eq!(runs, 2);
    assert!(matches!(answers.as_slice(), [Ok(1)]), "{answers:?}");
}

#[test]
fn a_refusal_by_the_rules_on_a_standby_is_the_answer() {
    let (answers, runs) = standby_then_primary(DomainError::InvalidTransition("no".into()));
    assert_eq!(runs, 1);
    assert!(
        matches!(answers.as_slice(), [Err(DomainError::InvalidTransition(_))]),
        "{answers:?}"
    );
}

//! Writes that queue up while one runs share its transaction and one commit, each keeping its
//! own outcome.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use crate::common;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use petstore_core::testkit::scenarios::name;
use petstore_core::{Category, DomainError, NewCategory, Store};
use petstore_store::{JobStore, SqliteStore};

/// A write to run on its own thread.
type Job<'a> = Box<dyn FnOnce(&common::TempStore) -> Result<(), DomainError> + Send + 'a>;

/// A write on another thread that keeps the writer connection (inserting "Holder") until
/// [`let_go`](HeldWriter::let_go).
struct HeldWriter<'scope> {
    release: mpsc::Sender<()>,
    holder: std::thread::ScopedJoinHandle<'scope, Result<Category, DomainError>>,
}

impl HeldWriter<'_> {
    /// Lets the write finish, which must succeed.
    fn let_go(self) {
        self.release.send(()).unwrap();
        self.holder.join().unwrap().unwrap();
    }
}

/// Starts a [`HeldWriter`] in `scope`; returns once it holds the connection.
fn hold_the_writer<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    store: &'scope common::TempStore,
) -> HeldWriter<'scope> {
    let (entered_tx, entered) = mpsc::channel::<()>();
    let (release_tx, release) = mpsc::channel::<()>();
    let holder = scope.spawn(move || {
        store.write(|tx| {
            entered_tx.send(()).unwrap();
            release.recv().unwrap();
            tx.insert_category(&NewCategory::new(name("Holder")))
        })
    });
    entered.recv().unwrap();
    HeldWriter {
        release: release_tx,
        holder,
    }
}

/// Holds the writer inside a write until `waiting` others queue behind it, runs `queued` in
/// those others, then lets everything finish. Returns the queued writes' outcomes.
fn batch_behind_a_held_write(
    store: &common::TempStore,
    queued: Vec<Job<'_>>,
) -> Vec<std::thread::Result<Result<(), DomainError>>> {
    let count = queued.len();
    std::thread::scope(|scope| {
        let held = hold_the_writer(scope, store);
        let others: Vec<_> = queued
            .into_iter()
            .map(|job| scope.spawn(move || job(store)))
            .collect();
        let deadline = Instant::now() + Duration::from_secs(10);
        while store.store.writers_waiting() < count {
            assert!(Instant::now() < deadline, "the writers did not queue up");
            std::thread::sleep(Duration::from_millis(5));
        }
        held.let_go();
        others.into_iter().map(|other| other.join()).collect()
    })
}

fn create(text: &'static str) -> Job<'static> {
    Box::new(move |store: &common::TempStore| {
        store
            .write(|tx| tx.insert_category(&NewCategory::new(name(text))))
            .map(|_| ())
    })
}

fn category_count(store: &impl Store) -> usize {
    store
        .read(|s| {
            s.categories(&petstore_core::CategoryQuery {
                limit: petstore_core::PageSize::new(100).unwrap(),
                after: None,
            })
        })
        .unwrap()
        .len()
}

#[test]
fn writes_that_queue_up_share_one_commit() {
    let store = common::TempStore::new();
    let before = store.store.writer_stats();
    let outcomes = batch_behind_a_held_write(
        &store,
        vec![
            create("A"),
            create("B"),
            create("C"),
            create("D"),
            create("E"),
        ],
    );
    assert!(
        outcomes.iter().all(|o| matches!(o, Ok(Ok(())))),
        "{outcomes:?}"
    );
    let after = store.store.writer_stats();
    assert_eq!(after.writes - before.writes, 6);
    assert_eq!(
        after.commits - before.commits,
        1,
        "one commit for the six writes"
    );
    assert_eq!(category_count(&store), 6);
}

#[test]
fn a_refused_write_in_a_batch_leaves_the_others_committed() {
    let store = common::TempStore::new();
    // "holder" clashes with the holder's category (names are unique regardless of case).
    let outcomes =
        batch_behind_a_held_write(&store, vec![create("A"), create("holder"), create("B")]);
    let refused = outcomes
        .iter()
        .filter(|o| matches!(o, Ok(Err(DomainError::CategoryExists { .. }))))
        .count();
    let ok = outcomes.iter().filter(|o| matches!(o, Ok(Ok(())))).count();
    assert_eq!((ok, refused), (2, 1), "{outcomes:?}");
    assert_eq!(category_count(&store), 3, "Holder, A and B");
}

#[test]
fn a_panicking_write_in_a_batch_panics_alone() {
    let store = common::TempStore::new();
    let panicking: Job<'static> = Box::new(|store: &common::TempStore| {
        store.write(|tx| {
            tx.insert_category(&NewCategory::new(name("Doomed")))?;
            panic!("a bug in a use case");
            #[allow(unreachable_code, reason = "the closure must have the type of a write")]
            Ok(())
        })
    });
    let outcomes = batch_behind_a_held_write(&store, vec![create("A"), panicking, create("B")]);
    assert_eq!(
        outcomes.iter().filter(|o| o.is_err()).count(),
        1,
        "only its own thread panicked"
    );
    assert_eq!(
        outcomes.iter().filter(|o| matches!(o, Ok(Ok(())))).count(),
        2
    );
    assert_eq!(category_count(&store), 3, "Holder, A and B; not Doomed");
    // The writer goes on.
    store
        .write(|tx| tx.insert_category(&NewCategory::new(name("After"))))
        .unwrap();
    assert_eq!(category_count(&store), 4);
}

/// Queues a write of category `text` on `executor`; its answer arrives on the receiver, with
/// the commits counted when it was given.
fn queue_create(
    executor: &common::HeldExecutor,
    store: &SqliteStore,
    text: &'static str,
) -> mpsc::Receiver<(Result<(), DomainError>, u64)> {
    let (answer, answered) = mpsc::channel();
    let counted = store.clone();
    executor.executor.write(
        None,
        move |store: JobStore<'_>| {
            store
                .write(|tx| tx.insert_category(&NewCategory::new(name(text))))
                .map(drop)
        },
        move |result| drop(answer.send((result, counted.writer_stats().commits))),
    );
    answered
}

/// Queues `work` on `executor` as a write, answering on the receiver.
fn queue_write<T: Send + 'static>(
    executor: &common::HeldExecutor,
    work: impl for<'s> FnMut(JobStore<'s>) -> petstore_core::RepoResult<T> + Send + 'static,
) -> mpsc::Receiver<petstore_core::RepoResult<T>> {
    let (answer, answered) = mpsc::channel();
    executor.executor.write(None, work, move |result| {
        let _ = answer.send(result);
    });
    answered
}

#[test]
fn writes_queued_together_return_at_once_and_are_answered_after_one_commit_after_the_last() {
    let store = common::TempStore::new();
    let sqlite = store.store.clone();
    let executor = common::HeldExecutor::start(&sqlite);
    let before = sqlite.writer_stats();
    let a = queue_create(&executor, &sqlite, "A");
    let b = queue_create(&executor, &sqlite, "B");
    let refused = queue_create(&executor, &sqlite, "a");
    let panicked = queue_write(&executor, |store: JobStore<'_>| {
        store.write(|tx| -> petstore_core::RepoResult<()> {
            tx.insert_category(&NewCategory::new(name("Doomed")))?;
            panic!("a bug in a use case")
        })
    });
    let other = sqlite.clone();
    let seen = queue_write(&executor, move |store: JobStore<'_>| {
        store.write(|tx| tx.insert_category(&NewCategory::new(name("C"))))?;
        let commits = other.writer_stats().commits;
        let in_burst = category_count(&store);
        let other = other.clone();
        let elsewhere = std::thread::spawn(move || {
            other
                .read(|s| s.categories(&petstore_core::CategoryQuery::default()))
                .map(|all| all.len())
        })
        .join()
        .unwrap()?;
        Ok((commits, in_burst, elsewhere))
    });
    executor.wake();
    assert_eq!(
        common::answer_of(&seen).unwrap(),
        Ok((before.commits, 3, 0)),
        "nothing is committed before the last write returns; a read in the burst sees its \
         writes, and another connection none of them"
    );
    for written in [&a, &b] {
        assert_eq!(
            common::answer_of(written).unwrap(),
            (Ok(()), before.commits + 1),
            "answered after the commit"
        );
    }
    assert!(
        matches!(
            common::answer_of(&refused).unwrap().0,
            Err(DomainError::CategoryExists { .. })
        ),
        "a refused write keeps its own error"
    );
    assert!(
        common::answer_of(&panicked).is_none(),
        "a panicking write gives no answer"
    );
    let after = sqlite.writer_stats();
    assert_eq!(after.writes - before.writes, 5);
    assert_eq!(after.commits - before.commits, 1, "one commit for them all");
    assert_eq!(
        category_count(&store),
        3,
        "A, B and C; not the refused or the panicked"
    );
}

#[test]
fn a_write_from_another_thread_waits_for_a_burst_and_commits_with_it() {
    let store = common::TempStore::new();
    let sqlite = store.store.clone();
    let executor = common::HeldExecutor::start(&sqlite);
    let before = sqlite.writer_stats();
    let other = sqlite.clone();
    let (handle_tx, handle) = mpsc::channel();
    let first = queue_write(&executor, move |store: JobStore<'_>| {
        store.write(|tx| tx.insert_category(&NewCategory::new(name("A"))))?;
        let writer = other.clone();
        handle_tx
            .send(std::thread::spawn(move || {
                writer
                    .write(|tx| tx.insert_category(&NewCategory::new(name("B"))))
                    .map(drop)
            }))
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while other.writers_waiting() < 1 {
            assert!(
                Instant::now() < deadline,
                "the other writer did not queue up"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    });
    executor.wake();
    assert_eq!(common::answer_of(&first), Some(Ok(())));
    let second = handle.recv().unwrap().join().unwrap();
    assert_eq!(second, Ok(()));
    let after = sqlite.writer_stats();
    assert_eq!(
        after.commits - before.commits,
        1,
        "the waiting write joined the burst's batch"
    );
    assert_eq!(category_count(&store), 2);
    // The writer is free again for writes of their own.
    assert_eq!(create("C")(&store), Ok(()));
    assert_eq!(category_count(&store), 3);
}

#[test]
fn when_the_writer_cannot_be_taken_every_write_of_the_burst_fails_at_once_with_the_reason() {
    let timeout = Duration::from_millis(250);
    let store = common::TempStore::with(|config| config.connection_timeout = timeout);
    let sqlite = store.store.clone();
    let executor = common::HeldExecutor::start(&sqlite);
    std::thread::scope(|scope| {
        // Another thread keeps the writer connection for longer than the time-out.
        let held = hold_the_writer(scope, &store);
        let queued: Vec<_> = ["A", "B", "C", "D"]
            .into_iter()
            .map(|text| queue_create(&executor, &sqlite, text))
            .collect();
        let started = Instant::now();
        executor.wake();
        let outcomes: Vec<_> = queued
            .iter()
            .map(|answered| common::answer_of(answered).unwrap().0)
            .collect();
        let took = started.elapsed();
        held.let_go();
        assert!(
            outcomes
                .iter()
                .all(|o| matches!(o, Err(DomainError::Unavailable(_)))),
            "{outcomes:?}"
        );
        // One wait for the writer, not one more per write (which would take 1 s here).
        assert!(took < Duration::from_millis(900), "took {took:?}");
    });
    assert_eq!(category_count(&store), 1, "only the holder's write");
    assert_eq!(create("After")(&store), Ok(()), "the writer goes on");
}

/// Another process holds the database's write lock (here a second connection, as `sqlite3`
/// would): each write, including one queued behind a burst already waiting for that lock,
/// answers `Unavailable` once it has waited the store's time-out, counted from when it was
/// queued, not from when its burst began.
#[test]
fn a_write_behind_another_process_lock_waits_no_longer_than_the_time_out_in_all() {
    use diesel::connection::SimpleConnection;
    let wait = Duration::from_millis(600);
    let store = common::TempStore::with(|config| {
        config.connection_timeout = wait;
        config.busy_timeout = wait;
    });
    let sqlite = store.store.clone();
    let mut other_process = petstore_store::connect(&store.config).unwrap();
    other_process.batch_execute("BEGIN IMMEDIATE").unwrap();
    let wake: petstore_store::Wake = std::sync::Arc::new(drop);
    let executor =
        petstore_store::Executor::start(&petstore_store::AnyStore::Sqlite(sqlite), wake).unwrap();
    let queue = |text: &'static str| {
        let (answer, answered) = mpsc::channel();
        let queued = Instant::now();
        executor.write(
            None,
            move |store: JobStore<'_>| {
                store
                    .write(|tx| tx.insert_category(&NewCategory::new(name(text))))
                    .map(drop)
            },
            move |result| {
                let _ = answer.send((result, queued.elapsed()));
            },
        );
        answered
    };
    let first = queue("A");
    // Queued while the first's burst waits for the lock.
    std::thread::sleep(wait / 2);
    let second = queue("B");
    for answered in [first, second] {
        let (result, took) = answered.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(
            matches!(result, Err(DomainError::Unavailable(_))),
            "{result:?}"
        );
        // The time-out, and the slack below which the lock's wait is not lowered.
        assert!(took < wait + Duration::from_millis(250), "took {took:?}");
        assert!(took >= wait - Duration::from_millis(50), "took {took:?}");
    }
    other_process.batch_execute("ROLLBACK").unwrap();
    assert_eq!(create("After")(&store), Ok(()), "the writer goes on");
}

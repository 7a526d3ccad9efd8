//! Writes that queue up while one runs share its transaction and one commit, each keeping its
//! own outcome.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use petstore_core::testkit::scenarios::name;
use petstore_core::{Category, DomainError, NewCategory, Store};

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

fn category_count(store: &common::TempStore) -> usize {
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
            #[allow(unreachable_code)]
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

#[test]
fn writes_on_a_thread_holding_the_batch_return_at_once_and_share_one_commit_after_the_last() {
    let store = common::TempStore::new();
    let before = store.store.writer_stats();
    let write = |text: &'static str| create(text)(&store);
    let outcome = store.store.sharing_writes(|| {
        assert_eq!(write("A"), Ok(()));
        assert_eq!(write("B"), Ok(()));
        assert!(
            matches!(write("a"), Err(DomainError::CategoryExists { .. })),
            "a refused write keeps its own error"
        );
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            store.write(|tx| -> petstore_core::RepoResult<()> {
                tx.insert_category(&NewCategory::new(name("Doomed")))?;
                panic!("a bug in a use case")
            })
        }));
        assert!(panicked.is_err());
        assert_eq!(write("C"), Ok(()));
        assert_eq!(
            store.store.writer_stats().commits,
            before.commits,
            "nothing is committed before the last write returns"
        );
        assert_eq!(
            category_count(&store),
            3,
            "a read on the holding thread sees the batch's writes"
        );
        let elsewhere = std::thread::scope(|scope| scope.spawn(|| category_count(&store)).join());
        assert_eq!(
            elsewhere.unwrap(),
            0,
            "another thread sees none of them yet"
        );
    });
    assert_eq!(outcome, Ok(()));
    let after = store.store.writer_stats();
    assert_eq!(after.writes - before.writes, 5);
    assert_eq!(after.commits - before.commits, 1, "one commit for them all");
    assert_eq!(
        category_count(&store),
        3,
        "A, B and C; not the refused or the panicked"
    );
}

#[test]
fn a_write_from_another_thread_waits_for_a_held_batch_and_commits_with_it() {
    let store = common::TempStore::new();
    let before = store.store.writer_stats();
    let (other, outcome) = std::thread::scope(|scope| {
        let mut other = None;
        let outcome = store.store.sharing_writes(|| {
            assert_eq!(create("A")(&store), Ok(()));
            other = Some(scope.spawn(|| create("B")(&store)));
            let deadline = Instant::now() + Duration::from_secs(10);
            while store.store.writers_waiting() < 1 {
                assert!(
                    Instant::now() < deadline,
                    "the other writer did not queue up"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        (other.unwrap().join().unwrap(), outcome)
    });
    assert_eq!((other, outcome), (Ok(()), Ok(())));
    let after = store.store.writer_stats();
    assert_eq!(
        after.commits - before.commits,
        1,
        "the waiting write joined the batch"
    );
    assert_eq!(category_count(&store), 2);
    // The writer is free again for writes of their own.
    assert_eq!(create("C")(&store), Ok(()));
    assert_eq!(category_count(&store), 3);
}

#[test]
fn when_the_batch_cannot_be_taken_every_write_of_the_thread_fails_at_once_with_the_reason() {
    let timeout = Duration::from_millis(250);
    let store = common::TempStore::with(|config| config.connection_timeout = timeout);
    std::thread::scope(|scope| {
        // Another thread keeps the writer connection for longer than the time-out.
        let store = &store;
        let held = hold_the_writer(scope, store);
        let started = Instant::now();
        let mut outcomes = Vec::new();
        let outcome = store.store.sharing_writes(|| {
            for text in ["A", "B", "C", "D"] {
                outcomes.push(create(text)(store));
            }
        });
        let took = started.elapsed();
        held.let_go();
        assert_eq!(outcome, Ok(()), "each write reports its own failure");
        assert!(
            outcomes
                .iter()
                .all(|o| matches!(o, Err(DomainError::Unavailable(_)))),
            "{outcomes:?}"
        );
        // One wait for the batch, not one more per write (which would take 1.25 s here).
        assert!(took < Duration::from_millis(900), "took {took:?}");
    });
    assert_eq!(category_count(&store), 1, "only the holder's write");
    assert_eq!(create("After")(&store), Ok(()), "the writer goes on");
}

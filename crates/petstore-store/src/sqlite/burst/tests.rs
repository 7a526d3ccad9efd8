use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use petstore_core::{CategoryQuery, Name, NewCategory, Resource};

use super::*;
use crate::config::StoreConfig;
use crate::executor::{Executor, Wake};
use crate::job::testing::{
    add_categories, add_category, answers_of, category_names, held_executor, reruns_since,
    writes_that_all_succeed_share_one_commit,
};
use crate::store::AnyStore;

/// A store on a new SQLite file in `dir`.
fn store_in(dir: &tempfile::TempDir) -> AnyStore {
    let config = StoreConfig::new(dir.path().join("bursts.db"));
    AnyStore::Sqlite(SqliteStore::open(&config).unwrap())
}

/// Writes that all succeed run together and share one commit; none runs again.
#[test]
fn writes_that_all_succeed_run_together_and_share_one_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(&dir);
    let (executor, held) = held_executor(&store);
    writes_that_all_succeed_share_one_commit(&store, &executor, &held);
}

/// A write refused after it changed a row cannot be undone alone: the burst undoes every
/// write and runs each job again in a savepoint of its own, still in one commit. Each job
/// is answered once, from its second run; the refused one leaves nothing.
#[test]
fn a_write_refused_after_it_changed_a_row_runs_each_job_of_the_burst_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(&dir);
    let (executor, held) = held_executor(&store);
    let before = store.writer_stats();
    let answered = add_categories(&executor, &["Dogs", "Cats", "Birds"], Some("Cats"));
    held.lock().unwrap().clear();
    let answers = answers_of(&answered, 3);
    assert!(answers[0].1.is_ok() && answers[2].1.is_ok(), "{answers:?}");
    assert_eq!(
        answers[1].1,
        Err(DomainError::PreconditionFailed(Resource::Category))
    );
    assert_eq!(category_names(&store), ["Dogs", "Birds"]);
    assert_eq!(reruns_since(&store, before), 1, "the burst ran again, once");
    let stats = store.writer_stats();
    assert_eq!(stats.commits - before.commits, 1);
    assert_eq!(
        stats.writes - before.writes,
        3,
        "the writes of the run that stood"
    );
}

/// A write refused before it changed a row (as the rules refuse most) leaves nothing to
/// undo: the burst goes on together, and nothing runs again.
#[test]
fn a_write_refused_before_it_changed_a_row_leaves_the_burst_together() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(&dir);
    let (executor, held) = held_executor(&store);
    let before = store.writer_stats();
    let answered = add_categories(&executor, &["Dogs", "Birds"], None);
    let (answer, refused) = mpsc::channel();
    executor.write(
        None,
        |store: crate::JobStore<'_>| {
            store.write(|tx| {
                tx.category(petstore_core::CategoryId::new(1).unwrap())?;
                Err::<(), _>(DomainError::PreconditionFailed(Resource::Category))
            })
        },
        move |result| answer.send(result).unwrap(),
    );
    let more = add_categories(&executor, &["Cats"], None);
    held.lock().unwrap().clear();
    assert!(answers_of(&answered, 2).iter().all(|(_, r)| r.is_ok()));
    assert!(answers_of(&more, 1)[0].1.is_ok());
    let refusal = refused.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(
        refusal,
        Err(DomainError::PreconditionFailed(Resource::Category))
    );
    assert_eq!(category_names(&store), ["Dogs", "Birds", "Cats"]);
    assert_eq!(reruns_since(&store, before), 0, "nothing ran again");
    assert_eq!(store.writer_stats().commits - before.commits, 1);
}

/// A use case that panics after it wrote is undone with its burst, whose other jobs run
/// again and commit.
#[test]
fn a_write_that_panics_is_undone_and_the_burst_commits_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(&dir);
    let (executor, held) = held_executor(&store);
    let (answer, answered) = mpsc::channel();
    let earlier = add_categories(&executor, &["Birds"], None);
    let panicking = answer.clone();
    executor.write(
        None,
        move |store: crate::JobStore<'_>| {
            store.write(|tx| {
                add_category(tx, "Dogs")?;
                panic!("a bug in a use case, after it wrote");
            })
        },
        move |result: RepoResult<petstore_core::CategoryId>| {
            panicking.send(("panicked", result)).unwrap();
        },
    );
    executor.write(
        None,
        move |store: crate::JobStore<'_>| store.write(|tx| add_category(tx, "Cats")),
        move |result| answer.send(("wrote", result)).unwrap(),
    );
    held.lock().unwrap().clear();
    assert!(answers_of(&earlier, 1)[0].1.is_ok());
    let (job, result) = answered.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(job, "wrote");
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(
        category_names(&store),
        ["Birds", "Cats"],
        "nothing of the panicked write stays"
    );
}

/// A burst that joins a batch another thread's write began undoes only its own writes: it
/// runs them in a savepoint, and the other write commits with the burst's second run.
#[test]
fn a_burst_that_joined_another_writes_batch_undoes_only_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(&dir);
    let AnyStore::Sqlite(sqlite) = &store else {
        unreachable!("a SQLite store")
    };
    let (executor, held) = held_executor(&store);
    let before = store.writer_stats();
    let store = &store;
    std::thread::scope(|scope| {
        let (entered_tx, entered) = mpsc::channel::<()>();
        let (release_tx, release) = mpsc::channel::<()>();
        let holder = scope.spawn(move || {
            store.write(|tx| {
                entered_tx.send(()).unwrap();
                release.recv().unwrap();
                add_category(tx, "Holder")
            })
        });
        entered.recv().unwrap();
        let answered = add_categories(&executor, &["Dogs", "Cats", "Birds"], Some("Cats"));
        held.lock().unwrap().clear();
        let deadline = Instant::now() + Duration::from_secs(10);
        while sqlite.writers_waiting() < 1 {
            assert!(Instant::now() < deadline, "the burst did not queue up");
            std::thread::sleep(Duration::from_millis(5));
        }
        release_tx.send(()).unwrap();
        let answers = answers_of(&answered, 3);
        assert!(answers[0].1.is_ok() && answers[2].1.is_ok(), "{answers:?}");
        assert!(answers[1].1.is_err(), "{answers:?}");
        assert!(holder.join().unwrap().is_ok());
    });
    assert_eq!(category_names(store), ["Holder", "Dogs", "Birds"]);
    assert_eq!(reruns_since(store, before), 1);
    assert_eq!(
        store.writer_stats().commits - before.commits,
        1,
        "one batch"
    );
}

#[test]
fn a_commit_that_fails_is_the_answer_of_every_write_of_the_burst() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&StoreConfig::new(dir.path().join("commit.db"))).unwrap();
    // Wake-ups held until both writes are queued, so that one burst takes them.
    let held = Arc::new(Mutex::new(Vec::new()));
    let holder = Arc::clone(&held);
    let wake: Wake = Arc::new(move |wake_up| holder.lock().unwrap().push(wake_up));
    let executor = Executor::start(&AnyStore::Sqlite(store.clone()), wake).unwrap();
    let (answer, answered) = mpsc::channel();
    let first = answer.clone();
    executor.write(
        None,
        |store: crate::JobStore<'_>| {
            let new = NewCategory::new(Name::parse("Dogs").unwrap());
            store.write(|tx| tx.insert_category(&new)).map(drop)
        },
        move |result| first.send(result).unwrap(),
    );
    // A pet whose category does not exist, its check deferred to the commit.
    executor.write(
        None,
        |store: crate::JobStore<'_>| {
            store.write_sql(
                "PRAGMA defer_foreign_keys = ON; \
                 INSERT INTO pets (name, name_key, category_id, status) \
                 VALUES ('Rex', 'rex', 999, 'available')",
            )
        },
        move |result| answer.send(result).unwrap(),
    );
    held.lock().unwrap().clear();
    let answers: Vec<RepoResult<()>> = (0..2)
        .map(|_| answered.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect();
    assert!(
        answers.iter().all(Result::is_err),
        "each write answers the commit's failure: {answers:?}"
    );
    assert_eq!(answers[0], answers[1]);
    let kept = store
        .read(|s| s.categories(&CategoryQuery::default()))
        .unwrap();
    assert!(kept.is_empty(), "nothing was committed: {kept:?}");
}

//! What the tests of both backends' bursts share: an executor whose bursts a test makes up
//! itself, and jobs that add categories.

use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use petstore_core::{
    CategoryId, CategoryQuery, DomainError, Name, NewCategory, RepoResult, Resource, Store,
    Transaction,
};

use super::JobStore;
use crate::WriterStats;
use crate::executor::{Executor, Wake, WakeUp};
use crate::store::AnyStore;

/// Wake-ups of an executor's threads, held until the list is cleared.
pub(crate) type Held = Arc<Mutex<Vec<WakeUp>>>;

/// The executor of `store`, with its wake-ups held until the returned list is cleared: the
/// writes queued by then make one burst.
pub(crate) fn held_executor(store: &AnyStore) -> (Executor, Held) {
    let held = Arc::new(Mutex::new(Vec::new()));
    let holder = Arc::clone(&held);
    let wake: Wake = Arc::new(move |wake_up| holder.lock().unwrap().push(wake_up));
    (Executor::start(store, wake).unwrap(), held)
}

/// Three writes queued as one burst of `executor` (over `store`, its wake-ups `held`) that all
/// succeed share one commit; each is counted once, and none runs again.
pub(crate) fn writes_that_all_succeed_share_one_commit(
    store: &AnyStore,
    executor: &Executor,
    held: &Held,
) {
    let before = store.writer_stats();
    let answered = add_categories(executor, &["Birds", "Cats", "Dogs"], None);
    held.lock().unwrap().clear();
    let answers = answers_of(&answered, 3);
    assert!(answers.iter().all(|(_, r)| r.is_ok()), "{answers:?}");
    assert_eq!(category_names(store), ["Birds", "Cats", "Dogs"]);
    let stats = store.writer_stats();
    assert_eq!(
        stats.commits - before.commits,
        1,
        "one commit for the three"
    );
    assert_eq!(stats.writes - before.writes, 3, "each write counted once");
    assert_eq!(reruns_since(store, before), 0, "nothing ran again");
}

/// Bursts that gave up, their jobs run again each alone, since `before`.
pub(crate) fn reruns_since(store: &AnyStore, before: WriterStats) -> u64 {
    store.writer_stats().reruns - before.reruns
}

/// Queues a job for each name that adds a category of that name, answering on the
/// channel returned with the name; the job named `refused` is refused after it wrote.
pub(crate) fn add_categories(
    executor: &Executor,
    names: &[&'static str],
    refused: Option<&'static str>,
) -> mpsc::Receiver<(&'static str, RepoResult<CategoryId>)> {
    let (answer, answered) = mpsc::channel();
    for &name in names {
        let answer = answer.clone();
        executor.write(
            None,
            move |store: JobStore<'_>| {
                store.write(|tx| {
                    let made = add_category(tx, name)?;
                    if Some(name) == refused {
                        return Err(DomainError::PreconditionFailed(Resource::Category));
                    }
                    Ok(made)
                })
            },
            move |result| answer.send((name, result)).unwrap(),
        );
    }
    answered
}

/// The answers of `count` jobs, in the order of their names.
pub(crate) fn answers_of<T: Ord, R>(
    answered: &mpsc::Receiver<(T, R)>,
    count: usize,
) -> Vec<(T, R)> {
    let mut answers: Vec<_> = (0..count)
        .map(|_| answered.recv_timeout(Duration::from_secs(20)).unwrap())
        .collect();
    answers.sort_by(|a, b| a.0.cmp(&b.0));
    answers
}

/// The names of the categories, in id order.
pub(crate) fn category_names(store: &AnyStore) -> Vec<String> {
    store
        .read(|s| s.categories(&CategoryQuery::default()))
        .unwrap()
        .into_iter()
        .map(|category| category.name.to_string())
        .collect()
}

/// Adds a category named `name`: its id.
pub(crate) fn add_category(tx: &mut dyn Transaction, name: &str) -> RepoResult<CategoryId> {
    let new = NewCategory::new(Name::parse(name).unwrap());
    Ok(tx.insert_category(&new)?.id)
}

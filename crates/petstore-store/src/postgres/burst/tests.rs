use std::sync::{Arc, Barrier, mpsc};
use std::time::Duration;

use petstore_core::{CategoryId, CategoryQuery, Name, Resource};

use diesel::{Connection, PgConnection};

use super::*;
use crate::WriterStats;
use crate::executor::Executor;
use crate::job::testing::{
    self, Held, add_categories, add_category, answers_of, category_names, held_executor,
    reruns_since,
};
use crate::store::AnyStore;
use crate::testing::ScratchPostgres;

/// A store on a scratch database, and its executor with held wake-ups; `None` (the test
/// is skipped) when no PostgreSQL server is configured.
fn scratch_store() -> Option<(ScratchPostgres, AnyStore, Executor, Held)> {
    let database = ScratchPostgres::create()?;
    let store = AnyStore::open(&database.config()).unwrap();
    let (executor, held) = held_executor(&store);
    Some((database, store, executor, held))
}

/// Writes that all keep their changes share one commit, and none runs again.
#[test]
fn writes_that_all_succeed_share_one_commit() {
    let Some((_database, store, executor, held)) = scratch_store() else {
        return;
    };
    testing::writes_that_all_succeed_share_one_commit(&store, &executor, &held);
}

/// A write refused after another kept its changes cannot be undone alone: the burst
/// rolls back and runs every job again, each in a transaction of its own. Each job is
/// answered once, from its last run, and what the first run wrote is gone. The next burst
/// that meets the same gives up the same way.
#[test]
fn a_burst_whose_later_write_is_refused_runs_each_job_again_alone() {
    refuse_one_of_three(MIDDLE_REFUSED, 2, |store, executor, held, before| {
        assert_eq!(reruns_since(store, before), 1, "the burst ran again, once");
        assert_eq!(
            store.writer_stats().writes - before.writes,
            3,
            "the writes of the run that stood"
        );
        let answered = add_categories(executor, &["Ants", "Bees"], Some("Bees"));
        held.lock().unwrap().clear();
        let answers = answers_of(&answered, 2);
        assert!(answers[0].1.is_ok() && answers[1].1.is_err(), "{answers:?}");
        assert_eq!(category_names(store), ["Dogs", "Birds", "Ants"]);
        assert_eq!(reruns_since(store, before), 2);
    });
}

/// A refused write that is the first to write in its transaction is undone with it; the
/// burst goes on and does not run again.
#[test]
fn a_refused_first_write_is_rolled_back_alone_without_running_the_burst_again() {
    refuse_one_of_three(["Cats", "Dogs", "Birds"], 1, |store, _, _, before| {
        assert_eq!(reruns_since(store, before), 0);
    });
}

/// A write that waits for a lock while its burst holds another write's gives up the wait
/// (2 ms), and the burst runs each job again alone: there the write waits for its lock as
/// long as it must. Every job is answered with success, each write kept once.
#[test]
fn a_burst_that_meets_a_held_lock_runs_again_and_every_write_lands() {
    let Some((database, store, executor, held)) = scratch_store() else {
        return;
    };
    let [x, y] = ["X", "Y"].map(|name| store.write(|tx| add_category(tx, name)).unwrap());
    let before = store.writer_stats();
    let mut holder = PgConnection::establish(database.url()).unwrap();
    holder
        .batch_execute(&format!(
            "BEGIN; SELECT 1 FROM categories WHERE id = {} FOR UPDATE",
            x.get()
        ))
        .unwrap();
    let (answer, answered) = mpsc::channel();
    for (job, id, name) in [("first", y, "Y1"), ("second", x, "X1")] {
        let answer = answer.clone();
        executor.write(
            None,
            move |store: JobStore<'_>| store.write(|tx| rename_category(tx, id, name)),
            move |result| answer.send((job, result)).unwrap(),
        );
    }
    held.lock().unwrap().clear();
    std::thread::sleep(Duration::from_millis(300));
    holder.batch_execute("COMMIT").unwrap();
    let answers = answers_of(&answered, 2);
    assert_eq!(answers, [("first", Ok(())), ("second", Ok(()))]);
    assert_eq!(category_names(&store), ["X1", "Y1"]);
    assert_eq!(reruns_since(&store, before), 1, "the burst ran again, once");
    assert_eq!(
        store.writer_stats().commits - before.commits,
        2,
        "the first job's commit alone, then the second's after its wait"
    );
}

/// Three jobs queued in this order; "Cats" is refused, the second of them.
const MIDDLE_REFUSED: [&str; 3] = ["Dogs", "Cats", "Birds"];

/// Three writes in one burst, queued in the order of `names`, the one adding "Cats"
/// refused after it wrote: each is answered its own outcome, the refused one leaves
/// nothing, and the others are kept in `commits` commits (one if they shared the burst's,
/// two if each ran again alone). `then` checks the rest, given what the store counted
/// before.
fn refuse_one_of_three(
    names: [&'static str; 3],
    commits: u64,
    then: impl FnOnce(&AnyStore, &Executor, &Held, WriterStats),
) {
    let Some((_database, store, executor, held)) = scratch_store() else {
        return;
    };
    let before = store.writer_stats();
    let answered = add_categories(&executor, &names, Some("Cats"));
    held.lock().unwrap().clear();
    let answers = answers_of(&answered, 3);
    assert!(answers[0].1.is_ok() && answers[2].1.is_ok(), "{answers:?}");
    assert_eq!(
        answers[1].1,
        Err(DomainError::PreconditionFailed(Resource::Category))
    );
    assert_eq!(
        category_names(&store),
        ["Dogs", "Birds"],
        "the refused write left nothing"
    );
    assert_eq!(
        store.writer_stats().commits - before.commits,
        commits,
        "the commits of the two kept writes"
    );
    then(&store, &executor, &held, before);
}

fn rename_category(tx: &mut dyn Transaction, id: CategoryId, name: &str) -> RepoResult<()> {
    let mut category = tx.category(id)?.unwrap();
    category.name = Name::parse(name).unwrap();
    tx.update_category(&category)
}

/// The webhook sender writes and then reads (it moves its cursor, then looks again): the
/// read must see the write, or the sender loops for ever and holds up every write queued
/// behind it, as it did in CI's fuzzing before reads committed the burst first. The burst
/// gives up at the read (committing there would leave writes that could not be run again)
/// and each job runs again alone, where the read sees the committed write.
#[test]
fn a_job_that_reads_after_writing_sees_its_write() {
    let Some((_database, store, executor, held)) = scratch_store() else {
        return;
    };
    let commits_before = store.writer_stats().commits;
    let (answer, answered) = mpsc::channel();
    let first = answer.clone();
    executor.write(
        None,
        move |store: JobStore<'_>| {
            store.write(|tx| add_category(tx, "Dogs"))?;
            let seen = store.read(|s| s.categories(&CategoryQuery::default()))?;
            Ok(seen.len())
        },
        move |result| first.send(("reader", result)).unwrap(),
    );
    executor.write(
        None,
        move |store: JobStore<'_>| store.write(|tx| add_category(tx, "Cats")).map(|_| 1),
        move |result| answer.send(("writer", result)).unwrap(),
    );
    held.lock().unwrap().clear();
    let mut answers: Vec<_> = (0..2)
        .map(|_| answered.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect();
    answers.sort_by_key(|(job, _)| *job);
    assert_eq!(answers, [("reader", Ok(1)), ("writer", Ok(1))]);
    assert_eq!(category_names(&store), ["Dogs", "Cats"]);
    assert_eq!(
        store.writer_stats().commits - commits_before,
        2,
        "each job's write committed alone"
    );
}

/// Two bursts on two nodes take two rows in opposite orders and wait on each other. The
/// server's deadlock detection is put out of reach (a minute, past the statement
/// time-out): the bursts' bounded lock waits must end the cycle. A burst whose write gives
/// up its wait rolls back, which lets the other burst finish, and runs its jobs again
/// alone. Every job is answered with success, and the rows end as some order of the
/// commits leaves them, each burst's jobs in their order.
#[test]
fn bursts_that_wait_on_each_other_give_up_the_wait_and_run_the_write_again() {
    let Some(database) = ScratchPostgres::create() else {
        return;
    };
    let mut admin = PgConnection::establish(database.url()).unwrap();
    admin
        .batch_execute(
            "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET deadlock_timeout = ''1min''', \
             current_database()); END $$",
        )
        .unwrap();
    let nodes = [
        AnyStore::open(&database.config()).unwrap(),
        AnyStore::open(&database.config()).unwrap(),
    ];
    let [x, y] = ["X", "Y"].map(|name| nodes[0].write(|tx| add_category(tx, name)).unwrap());
    let commits_before: u64 = nodes.iter().map(|n| n.writer_stats().commits).sum();
    // Both first writes hold their rows before either second write starts.
    let both_hold = Arc::new(Barrier::new(2));
    let (answer, answered) = mpsc::channel();
    let mut executors = Vec::new();
    for (node, (burst, first, second)) in nodes.iter().zip([("A", x, y), ("B", y, x)]) {
        let (executor, held) = held_executor(node);
        let both_hold = Arc::clone(&both_hold);
        // Only the first run waits: a run again alone would wait at the barrier alone.
        let mut first_run = true;
        let answer_first = answer.clone();
        executor.write(
            None,
            move |store: JobStore<'_>| {
                let renamed = store.write(|tx| rename_category(tx, first, &format!("{burst}1")));
                if std::mem::take(&mut first_run) {
                    both_hold.wait();
                }
                renamed
            },
            move |result| answer_first.send((format!("{burst}1"), result)).unwrap(),
        );
        let answer_second = answer.clone();
        executor.write(
            None,
            move |store: JobStore<'_>| {
                store.write(|tx| rename_category(tx, second, &format!("{burst}2")))
            },
            move |result| answer_second.send((format!("{burst}2"), result)).unwrap(),
        );
        executors.push((executor, held));
    }
    for (_, held) in &executors {
        held.lock().unwrap().clear();
    }
    let mut answers: Vec<_> = (0..4)
        .map(|_| answered.recv_timeout(Duration::from_secs(20)).unwrap())
        .collect();
    answers.sort_by(|a, b| a.0.cmp(&b.0));
    let expected: Vec<(String, RepoResult<()>)> = ["A1", "A2", "B1", "B2"]
        .into_iter()
        .map(|job| (job.to_string(), Ok(())))
        .collect();
    assert_eq!(answers, expected);
    // X is renamed by A1 and B2, Y by B1 and A2. With each burst's jobs in order, the
    // last renames are B2 and A2 (the second writes last), A1 and A2 (B, then A) or B2
    // and B1 (A, then B); A1 and B1 would need each first write after the other's second.
    let names = category_names(&nodes[0]);
    assert!(
        [["B2", "A2"], ["A1", "A2"], ["B2", "B1"]].contains(&[&*names[0], &*names[1]]),
        "{names:?}"
    );
    let commits: u64 = nodes.iter().map(|n| n.writer_stats().commits).sum();
    assert!(
        (3..=4).contains(&(commits - commits_before)),
        "one commit for a burst that went through, two for one run again alone: {}",
        commits - commits_before
    );
}

/// A use case that panics halfway through its write is answered as the executor answers
/// any panic; what it wrote before the panic is undone, and the burst commits the rest.
#[test]
fn a_write_that_panics_is_undone_alone_and_the_burst_commits_the_rest() {
    let Some((_database, store, executor, held)) = scratch_store() else {
        return;
    };
    let (answer, answered) = mpsc::channel();
    let panicking = answer.clone();
    executor.write(
        None,
        move |store: JobStore<'_>| {
            store.write(|tx| {
                add_category(tx, "Dogs")?;
                panic!("a bug in a use case, after it wrote");
            })
        },
        move |result: RepoResult<CategoryId>| panicking.send(("panicked", result)).unwrap(),
    );
    executor.write(
        None,
        move |store: JobStore<'_>| store.write(|tx| add_category(tx, "Cats")),
        move |result| answer.send(("wrote", result)).unwrap(),
    );
    held.lock().unwrap().clear();
    let (job, result) = answered.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(job, "wrote");
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(
        category_names(&store),
        ["Cats"],
        "nothing of the panicked write stays"
    );
}

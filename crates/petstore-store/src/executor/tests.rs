//! The chore thread and the thread pools (`executor.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::start_chore;
use crate::job::Chore;

/// Waits up to five seconds for `done`.
fn eventually(done: impl Fn() -> bool) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    done()
}

/// A chore runs again and again, and its thread ends (dropping the chore) when its handle goes.
#[test]
fn a_chore_runs_every_so_often_until_its_handle_goes() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counting = Arc::clone(&runs);
    let stop = start_chore(Chore {
        every: Duration::from_millis(10),
        run: Box::new(move || {
            counting.fetch_add(1, Ordering::SeqCst);
        }),
    })
    .unwrap();
    assert!(
        eventually(|| runs.load(Ordering::SeqCst) >= 3),
        "it runs repeatedly"
    );
    drop(stop);
    assert!(
        eventually(|| Arc::strong_count(&runs) == 1),
        "the thread ended and dropped the chore"
    );
}

/// The first jobs queued after a start wait for the wake hook like any later ones: no thread
/// still starting takes one on its own. Tests that hold the hook to queue a burst rely on it.
#[test]
fn jobs_queued_right_after_a_start_wait_for_the_wake_hook() {
    use std::sync::Mutex;

    use super::{Threads, Wake, WakeUp};
    use crate::job::ThreadSpec;

    for _ in 0..50 {
        let held = Arc::new(Mutex::new(Vec::<WakeUp>::new()));
        let holding = Arc::clone(&held);
        let wake: Wake = Arc::new(move |wake_up| holding.lock().unwrap().push(wake_up));
        let taken = Arc::new(Mutex::new(Vec::<Vec<u32>>::new()));
        let taking = Arc::clone(&taken);
        let threads = Threads::start(
            "petstore-test",
            ThreadSpec {
                count: 2,
                burst: 8,
                run: Arc::new(move |jobs: Vec<u32>| taking.lock().unwrap().push(jobs)),
            },
            wake,
        )
        .unwrap();
        for job in 0..3 {
            threads.queue(job);
        }
        std::thread::sleep(Duration::from_millis(1));
        assert!(
            taken.lock().unwrap().is_empty(),
            "no job is taken before the hook wakes a thread"
        );
        assert_eq!(held.lock().unwrap().len(), 1, "one wake-up for the three");
        held.lock().unwrap().clear();
        assert!(
            eventually(|| taken.lock().unwrap().concat().len() == 3),
            "woken, a thread takes them"
        );
        assert_eq!(taken.lock().unwrap().len(), 1, "in one burst");
    }
}

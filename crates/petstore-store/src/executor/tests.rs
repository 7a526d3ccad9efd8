//! The chore thread (`executor.rs`, [`start_chore`]).

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

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use super::*;

fn at(lsn: u64) -> Position {
    Position { timeline: 1, lsn }
}

/// Starts a read whose question is held until `release` is sent: it returns once the
/// question is out, with the thread that waits for its answer.
fn asking_and_held(
    question: &Arc<SharedQuestion>,
    lsn: u64,
) -> (mpsc::Sender<()>, thread::JoinHandle<Option<Position>>) {
    let (out, is_out) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let shared = Arc::clone(question);
    let reader = thread::spawn(move || {
        shared.position_after(Instant::now(), move || {
            out.send(()).expect("the test waits");
            released.recv().expect("the test releases");
            Some(at(lsn))
        })
    });
    is_out.recv().expect("the question goes out");
    (release, reader)
}

#[test]
fn reads_queued_before_the_question_in_flight_take_its_answer_without_asking() {
    let question = Arc::new(SharedQuestion::default());
    let queued = Instant::now();
    let (release, first) = asking_and_held(&question, 10);
    let shared = Arc::clone(&question);
    let second = thread::spawn(move || {
        shared.position_after(queued, || panic!("a second question for a read it served"))
    });
    // Let the second burst wait on the question in flight.
    thread::sleep(Duration::from_millis(50));
    release.send(()).expect("the first is held");
    assert_eq!(first.join().expect("no panic"), Some(at(10)));
    assert_eq!(second.join().expect("no panic"), Some(at(10)));
}

#[test]
fn a_read_queued_after_the_question_was_sent_waits_for_the_next_one() {
    let question = Arc::new(SharedQuestion::default());
    let (release, first) = asking_and_held(&question, 10);
    // Queued after the first question went out: a write acknowledged just before may be past
    // its answer.
    let queued = Instant::now();
    let asked = Arc::new(AtomicUsize::new(0));
    let (shared, count) = (Arc::clone(&question), Arc::clone(&asked));
    let late = thread::spawn(move || {
        shared.position_after(queued, || {
            count.fetch_add(1, Ordering::SeqCst);
            Some(at(20))
        })
    });
    thread::sleep(Duration::from_millis(50));
    // The next question waits for the one in flight: one at a time.
    assert_eq!(asked.load(Ordering::SeqCst), 0);
    release.send(()).expect("the first is held");
    assert_eq!(first.join().expect("no panic"), Some(at(10)));
    assert_eq!(late.join().expect("no panic"), Some(at(20)));
    assert_eq!(asked.load(Ordering::SeqCst), 1);
}

#[test]
fn a_failed_question_fails_the_reads_it_served_and_the_next_read_asks_again() {
    let question = SharedQuestion::default();
    let queued = Instant::now();
    assert_eq!(question.position_after(queued, || None), None);
    fails_the_reads_it_served_and_the_next_asks_again(&question, queued);
}

/// After a question sent once `queued` had passed found no answer: a read queued then gets
/// none (the primary serves it) without asking again, and a read queued later asks anew.
fn fails_the_reads_it_served_and_the_next_asks_again(question: &SharedQuestion, queued: Instant) {
    assert_eq!(
        question.position_after(queued, || panic!("asked again for a read it served")),
        None
    );
    assert_eq!(
        question.position_after(Instant::now(), || Some(at(5))),
        Some(at(5))
    );
}

#[test]
fn a_question_that_panicked_leaves_no_read_waiting_and_the_next_asks_again() {
    let question = SharedQuestion::default();
    let queued = Instant::now();
    let asking = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        question.position_after(queued, || panic!("the statement's code panicked"))
    }));
    assert!(asking.is_err());
    fails_the_reads_it_served_and_the_next_asks_again(&question, queued);
}

#[test]
fn under_many_readers_one_question_is_out_at_a_time_and_every_answer_was_asked_after_its_read() {
    let question = Arc::new(SharedQuestion::default());
    // Each question's answer is its number; `sent[n]` is when question n went out.
    let sent = Arc::new(Mutex::new(Vec::<Instant>::new()));
    let out = Arc::new(AtomicUsize::new(0));
    let most_out = Arc::new(AtomicUsize::new(0));
    let readers: Vec<_> = (0..8)
        .map(|_| {
            let (question, sent) = (Arc::clone(&question), Arc::clone(&sent));
            let (out, most_out) = (Arc::clone(&out), Arc::clone(&most_out));
            thread::spawn(move || {
                let mut served = Vec::new();
                for _ in 0..40 {
                    let queued = Instant::now();
                    let answer = question.position_after(queued, || {
                        let now_out = out.fetch_add(1, Ordering::SeqCst) + 1;
                        most_out.fetch_max(now_out, Ordering::SeqCst);
                        let number = {
                            let mut sent = sent.lock().expect("not poisoned");
                            sent.push(Instant::now());
                            sent.len() - 1
                        };
                        thread::sleep(Duration::from_micros(300));
                        out.fetch_sub(1, Ordering::SeqCst);
                        Some(at(number as u64))
                    });
                    served.push((queued, answer.expect("every question answered").lsn));
                }
                served
            })
        })
        .collect();
    let served: Vec<(Instant, u64)> = readers
        .into_iter()
        .flat_map(|reader| reader.join().expect("no panic"))
        .collect();
    let sent = sent.lock().expect("not poisoned");
    assert_eq!(most_out.load(Ordering::SeqCst), 1);
    for (queued, number) in &served {
        let index = usize::try_from(*number).expect("small");
        assert!(
            sent[index] >= *queued,
            "an answer asked before its read was queued"
        );
    }
    // Shared: fewer questions than reads.
    assert!(
        sent.len() < served.len(),
        "{} questions for {} reads",
        sent.len(),
        served.len()
    );
}

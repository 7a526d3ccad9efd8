//! Threads of our own for the store's work on SQLite, off the async workers.
//!
//! Database work never runs on an async worker: a read can wait (a page from the disk, a lock
//! held by a checkpoint, a pool with every connection out), and that would stall every
//! connection the worker serves. actix's blocking pool keeps it off them, but at a price on a
//! busy core: each request wakes a thread of its own, so 32 requests in flight cost 32 thread
//! wake-ups and as many wake-ups back. Here a few long-lived threads share one queue: a
//! thread that finds work waiting takes it without sleeping, and only an idle thread is woken,
//! so a burst of requests is served by one wake-up. That wake-up is made by a small task the
//! async worker runs after the other requests it has ready, so that the work those queue
//! joins the same burst instead of each waking a thread (and, on a busy core, each switching
//! to it and back).
//!
//! A thread runs the jobs it takes at once through a [`Burst`], the store's way of letting them
//! share: reads share one pooled connection and read transaction
//! (`AnyStore::sharing_reads`); writes share the writer's transaction and one commit after
//! the last of them (`AnyStore::sharing_writes`), which is why a write's answer waits for the
//! burst's end ([`BurstThreads::run_settled`]).

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use petstore_core::DomainError;
use tokio::sync::oneshot;

/// A queued job: runs its work and answers at once, or gives back how to answer once the
/// burst it ran in has ended ([`BurstThreads::run_settled`]).
type Job = Box<dyn FnOnce() -> Option<Settle> + Send>;

/// Answers a job once its burst has ended, given the burst's failure if it failed.
type Settle = Box<dyn FnOnce(Option<&DomainError>)>;

/// How a thread runs the jobs it takes at once: it calls its argument, which runs them,
/// exactly once, and answers whether what they did as a whole holds (for writes: whether
/// their shared commit succeeded). The state passes the store's way of letting them share
/// (`AnyStore::sharing_reads`, `AnyStore::sharing_writes`).
pub type Burst = Arc<RunBurst>;

/// See [`Burst`].
pub type RunBurst = dyn Fn(&mut dyn FnMut()) -> Result<(), DomainError> + Send + Sync;

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    /// Threads asleep on the condition variable: only then does a new job wake one.
    idle: usize,
    /// Of those, threads already woken and not yet running: a job needs no other wake-up.
    waking: usize,
    closed: bool,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
}

/// The threads; dropping the last handle lets them finish the queue and exit.
#[derive(Clone)]
pub struct BurstThreads(Arc<Closer>);

impl std::fmt::Debug for BurstThreads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BurstThreads").finish_non_exhaustive()
    }
}

/// Closes the queue when the last [`BurstThreads`] goes.
struct Closer(Arc<Shared>);

impl Drop for Closer {
    fn drop(&mut self) {
        let mut queue = self.0.queue.lock().unwrap_or_else(PoisonError::into_inner);
        queue.closed = true;
        self.0.ready.notify_all();
    }
}

/// Why a job gave no answer.
#[derive(Debug, thiserror::Error)]
#[error("the work panicked, or no thread could run it")]
pub struct NoAnswer;

impl BurstThreads {
    /// Starts `count` threads (at least one) named `name-N`, which run the jobs they find
    /// waiting, at most `max_burst` at once, together through `burst`.
    pub fn start(
        name: &str,
        count: usize,
        max_burst: usize,
        burst: Burst,
    ) -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        for n in 0..count.max(1) {
            let shared = Arc::clone(&shared);
            let burst = Arc::clone(&burst);
            std::thread::Builder::new()
                .name(format!("{name}-{n}"))
                .spawn(move || serve(&shared, &*burst, max_burst.max(1)))?;
        }
        Ok(Self(Arc::new(Closer(shared))))
    }

    /// Runs `work` on one of the threads, inside the caller's tracing span, and waits for it
    /// without blocking the caller's thread. The answer goes back as soon as `work` returns.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, NoAnswer> {
        let (answer, answered) = oneshot::channel();
        let span = tracing::Span::current();
        self.queue(Box::new(move || {
            let _entered = span.enter();
            // A panic drops `answer`: the caller sees `NoAnswer`, the thread lives on.
            if let Ok(value) = catch_unwind(AssertUnwindSafe(work)) {
                let _ = answer.send(value);
            }
            None
        }));
        answered.await.map_err(|_| NoAnswer)
    }

    /// Like [`run`](Self::run), but the answer waits for the end of the burst `work` runs in:
    /// if the burst failed (its writes' shared commit), a `work` that succeeded answers that
    /// failure instead of its value. For writes that are not durable until the burst ends.
    pub async fn run_settled<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> Result<T, DomainError> + Send + 'static,
    ) -> Result<Result<T, DomainError>, NoAnswer> {
        let (answer, answered) = oneshot::channel();
        let span = tracing::Span::current();
        self.queue(Box::new(move || {
            let outcome = {
                let _entered = span.enter();
                catch_unwind(AssertUnwindSafe(work))
            };
            // A panic drops `answer`: the caller sees `NoAnswer`.
            let result = outcome.ok()?;
            Some(Box::new(move |failed: Option<&DomainError>| {
                let settled = match (result, failed) {
                    (Ok(_), Some(failure)) => Err(failure.clone()),
                    (result, _) => result,
                };
                let _ = answer.send(settled);
            }))
        }));
        answered.await.map_err(|_| NoAnswer)
    }

    /// Queues `job`, and makes sure a thread will take it.
    fn queue(&self, job: Job) {
        let shared = &self.0.0;
        let asleep = {
            let mut queue = shared.queue.lock().unwrap_or_else(PoisonError::into_inner);
            queue.jobs.push_back(job);
            queue.idle > queue.waking
        };
        if asleep {
            self.wake_after_burst();
        }
    }
}

thread_local! {
    /// The queues (reads', the writer's) this async worker's queued wake-up task will wake
    /// a thread for: one task per burst, whichever queues it serves.
    static TO_WAKE: std::cell::RefCell<Vec<Arc<Shared>>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl BurstThreads {
    /// Wakes a sleeping thread once this async worker has run the other tasks it has ready:
    /// from a task of the worker's own, queued behind them (one per burst), so that
    /// cancelling the job that queued it cannot lose the wake-up. Off an actix worker (no
    /// arbiter to queue it on), wakes one at once.
    fn wake_after_burst(&self) {
        let first = TO_WAKE.with(|to_wake| {
            let mut to_wake = to_wake.borrow_mut();
            if to_wake.iter().any(|queued| Arc::ptr_eq(queued, &self.0.0)) {
                return None;
            }
            to_wake.push(Arc::clone(&self.0.0));
            Some(to_wake.len() == 1)
        });
        if first != Some(true) {
            // Known already, or joining the task queued for another queue.
            return;
        }
        // The task only drops `wake`: a worker that stops before running it drops it too,
        // and without an arbiter it is dropped here.
        let wake = WakeOnDrop;
        if let Some(worker) = actix_rt::Arbiter::try_current() {
            worker.spawn(async move { drop(wake) });
        }
    }
}

/// Wakes a sleeping thread for each queue in `TO_WAKE` when dropped, and lets this thread
/// queue the next wake-up.
struct WakeOnDrop;

impl Drop for WakeOnDrop {
    fn drop(&mut self) {
        let to_wake = TO_WAKE.with(|to_wake| std::mem::take(&mut *to_wake.borrow_mut()));
        for shared in &to_wake {
            wake_one(shared);
        }
    }
}

/// Wakes one sleeping thread if a job waits and none is being woken yet.
fn wake_one(shared: &Shared) {
    let mut queue = shared.queue.lock().unwrap_or_else(PoisonError::into_inner);
    queue.wake_one_for_jobs(&shared.ready);
}

impl Queue {
    /// Wakes one thread asleep on `ready` if a job waits and every thread being woken already
    /// has one.
    fn wake_one_for_jobs(&mut self, ready: &Condvar) {
        if !self.jobs.is_empty() && self.idle > self.waking {
            self.waking += 1;
            ready.notify_one();
        }
    }
}

fn serve(shared: &Shared, burst: &RunBurst, max_burst: usize) {
    let mut queue = shared.queue.lock().unwrap_or_else(PoisonError::into_inner);
    let mut settles: Vec<Settle> = Vec::new();
    loop {
        if !queue.jobs.is_empty() {
            let take = queue.jobs.len().min(max_burst);
            let jobs: Vec<Job> = queue.jobs.drain(..take).collect();
            // More wait than this thread takes: another thread may take them meanwhile.
            queue.wake_one_for_jobs(&shared.ready);
            drop(queue);
            let mut jobs = jobs.into_iter();
            let outcome = burst(&mut || settles.extend(jobs.by_ref().filter_map(|job| job())));
            // A hook that did not run them all drops the rest: their callers see `NoAnswer`.
            drop(jobs);
            let failed = outcome.err();
            for settle in settles.drain(..) {
                settle(failed.as_ref());
            }
            queue = shared.queue.lock().unwrap_or_else(PoisonError::into_inner);
        } else if queue.closed {
            return;
        } else {
            queue.idle += 1;
            queue = shared
                .ready
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
            queue.idle -= 1;
            queue.waking = queue.waking.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn one_by_one() -> Burst {
        Arc::new(|run: &mut dyn FnMut()| {
            run();
            Ok(())
        })
    }

    #[actix_web::test]
    async fn reads_queued_meanwhile_run_as_one_burst() {
        let bursts = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&bursts);
        let in_burst = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&in_burst);
        let burst: Burst = Arc::new(move |run: &mut dyn FnMut()| {
            counter.store(0, Ordering::SeqCst);
            run();
            seen.lock().unwrap().push(counter.load(Ordering::SeqCst));
            Ok(())
        });
        let threads = BurstThreads::start("test", 1, 16, burst).unwrap();
        // The only reader is held by a first read while nine more queue up.
        let (release, held) = std::sync::mpsc::channel::<()>();
        let count = Arc::clone(&in_burst);
        let holder = threads.clone();
        let first = actix_web::rt::spawn(async move {
            holder
                .run(move || {
                    count.fetch_add(1, Ordering::SeqCst);
                    held.recv().unwrap();
                })
                .await
        });
        while in_burst.load(Ordering::SeqCst) == 0 {
            actix_web::rt::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        let queued: Vec<_> = (0..9)
            .map(|_| {
                let count = Arc::clone(&in_burst);
                let threads = threads.clone();
                actix_web::rt::spawn(async move {
                    threads
                        .run(move || {
                            count.fetch_add(1, Ordering::SeqCst);
                        })
                        .await
                })
            })
            .collect();
        // Let the nine queue their jobs before the first lets go of the reader.
        while threads.0.0.queue.lock().unwrap().jobs.len() < 9 {
            actix_web::rt::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        release.send(()).unwrap();
        first.await.unwrap().unwrap();
        for read in futures_util::future::join_all(queued).await {
            read.unwrap().unwrap();
        }
        assert_eq!(
            *bursts.lock().unwrap(),
            vec![1, 9],
            "the nine waited and ran together"
        );
    }

    #[actix_web::test]
    async fn reads_run_off_the_caller_and_answer_in_any_number() {
        let threads = BurstThreads::start("test", 2, 16, one_by_one()).unwrap();
        let caller = std::thread::current().id();
        let ran_elsewhere = threads
            .run(move || std::thread::current().id() != caller)
            .await
            .unwrap();
        assert!(ran_elsewhere);
        let count = Arc::new(AtomicUsize::new(0));
        let reads = (0..100).map(|n| {
            let count = Arc::clone(&count);
            let threads = threads.clone();
            async move {
                threads
                    .run(move || {
                        count.fetch_add(1, Ordering::SeqCst);
                        n * 2
                    })
                    .await
            }
        });
        let answers = futures_util::future::join_all(reads).await;
        assert_eq!(
            answers.into_iter().map(Result::unwrap).collect::<Vec<_>>(),
            (0..100).map(|n| n * 2).collect::<Vec<_>>()
        );
        assert_eq!(count.load(Ordering::SeqCst), 100);
    }

    #[actix_web::test]
    async fn a_read_cancelled_before_its_wake_up_still_runs() {
        use futures_util::FutureExt as _;
        let threads = BurstThreads::start("test", 1, 16, one_by_one()).unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&ran);
        // Polled once, the read has queued its job and yielded before waking a reader.
        let read = threads.run(move || counter.fetch_add(1, Ordering::SeqCst));
        assert!(
            read.now_or_never().is_none(),
            "the read waits for its answer"
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while ran.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < deadline {
            actix_web::rt::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert_eq!(
            ran.load(Ordering::SeqCst),
            1,
            "a reader was woken for the job"
        );
    }

    #[actix_web::test]
    async fn a_panicking_read_fails_alone() {
        let threads = BurstThreads::start("test", 1, 16, one_by_one()).unwrap();
        let failed = threads.run(|| -> u32 { panic!("a bug in a read") }).await;
        assert!(failed.is_err());
        assert_eq!(threads.run(|| 7).await.unwrap(), 7, "the thread lives on");
    }

    #[actix_web::test]
    async fn settled_work_answers_after_its_burst_and_with_its_failure() {
        let ended = Arc::new(AtomicUsize::new(0));
        let marker = Arc::clone(&ended);
        let failing: Burst = Arc::new(move |run: &mut dyn FnMut()| {
            run();
            marker.fetch_add(1, Ordering::SeqCst);
            Err(DomainError::Storage(petstore_core::Failure::new(
                "the commit failed",
            )))
        });
        let threads = BurstThreads::start("test", 1, 16, failing).unwrap();
        let lost = threads.run_settled(|| Ok(7)).await.unwrap();
        assert_eq!(
            ended.load(Ordering::SeqCst),
            1,
            "answered after the burst ended"
        );
        assert!(
            matches!(lost, Err(DomainError::Storage(_))),
            "the burst's failure replaces the value: {lost:?}"
        );
        let refused = threads
            .run_settled(|| -> Result<u32, DomainError> { Err(DomainError::IdempotencyKeyReused) })
            .await
            .unwrap();
        assert_eq!(
            refused,
            Err(DomainError::IdempotencyKeyReused),
            "its own error stays"
        );
        let panicked = threads
            .run_settled(|| -> Result<u32, DomainError> { panic!("a bug in a write") })
            .await;
        assert!(panicked.is_err());
        let kept = BurstThreads::start("test", 1, 16, one_by_one()).unwrap();
        assert_eq!(kept.run_settled(|| Ok(7)).await.unwrap(), Ok(7));
    }

    #[actix_web::test]
    async fn jobs_queued_at_once_for_two_sets_of_threads_each_wake_one() {
        let reads = BurstThreads::start("test-reader", 1, 16, one_by_one()).unwrap();
        let writes = BurstThreads::start("test-writer", 1, 64, one_by_one()).unwrap();
        // Both jobs are queued in one turn of this worker, behind one wake-up task.
        let both = futures_util::future::join(reads.run(|| 1), writes.run_settled(|| Ok(2)));
        let answers = actix_web::rt::time::timeout(std::time::Duration::from_secs(10), both)
            .await
            .expect("both sets of threads were woken");
        assert_eq!((answers.0.unwrap(), answers.1.unwrap()), (1, Ok(2)));
    }
}

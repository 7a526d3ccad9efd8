//! Threads of our own for reads on SQLite, off the async workers.
//!
//! Database work never runs on an async worker: a read can wait (a page from the disk, a lock
//! held by a checkpoint, a pool with every connection out), and that would stall every
//! connection the worker serves. actix's blocking pool keeps it off them, but at a price on a
//! busy core: each request wakes a thread of its own, so 32 reads in flight cost 32 thread
//! wake-ups and as many wake-ups back. Here a few long-lived threads share one queue: a
//! thread that finds work waiting takes it without sleeping, and only an idle thread is woken,
//! so a burst of reads is served by one wake-up. That wake-up is made by a small task the
//! async worker runs after the other requests it has ready, so that the reads those make join
//! the same burst instead of each waking a thread (and, on a busy core, each switching to it
//! and back). A thread runs the reads it takes at once through a [`Burst`], which lets them
//! share one pooled connection and read transaction (`AnyStore::sharing_reads`).

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use tokio::sync::oneshot;

type Job = Box<dyn FnOnce() + Send>;

/// How a reader thread runs the jobs it takes at once: it calls its argument, which runs
/// them, exactly once. The state passes the store's way of letting them share one read
/// transaction (`AnyStore::sharing_reads`).
pub type Burst = Arc<dyn Fn(&mut dyn FnMut()) + Send + Sync>;

/// Jobs one reader thread takes from the queue at once, at most: more would make the last
/// of them wait longer for the others, for little more saved.
const MAX_BURST: usize = 16;

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

/// The reader threads; dropping the last handle lets them finish the queue and exit.
#[derive(Clone)]
pub struct ReadThreads(Arc<Closer>);

impl std::fmt::Debug for ReadThreads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadThreads").finish_non_exhaustive()
    }
}

/// Closes the queue when the last [`ReadThreads`] goes.
struct Closer(Arc<Shared>);

impl Drop for Closer {
    fn drop(&mut self) {
        let mut queue = self.0.queue.lock().unwrap_or_else(PoisonError::into_inner);
        queue.closed = true;
        self.0.ready.notify_all();
    }
}

/// Why a read gave no answer.
#[derive(Debug, thiserror::Error)]
#[error("the read panicked, or no reader thread could run it")]
pub struct ReadFailed;

impl ReadThreads {
    /// Starts `count` reader threads (at least one), which run the jobs they find waiting
    /// together through `burst`.
    pub fn start(count: usize, burst: Burst) -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        for n in 0..count.max(1) {
            let shared = Arc::clone(&shared);
            let burst = Arc::clone(&burst);
            std::thread::Builder::new()
                .name(format!("petstore-reader-{n}"))
                .spawn(move || serve(&shared, &*burst))?;
        }
        Ok(Self(Arc::new(Closer(shared))))
    }

    /// Runs `work` on a reader thread, inside the caller's tracing span, and waits for it
    /// without blocking the caller's thread.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ReadFailed> {
        let (answer, answered) = oneshot::channel();
        let span = tracing::Span::current();
        let job: Job = Box::new(move || {
            let _entered = span.enter();
            // A panic drops `answer`: the caller sees `ReadFailed`, the thread lives on.
            if let Ok(value) = catch_unwind(AssertUnwindSafe(work)) {
                let _ = answer.send(value);
            }
        });
        let shared = &self.0.0;
        let asleep = {
            let mut queue = shared.queue.lock().unwrap_or_else(PoisonError::into_inner);
            queue.jobs.push_back(job);
            queue.idle > queue.waking
        };
        if asleep {
            self.wake_after_burst();
        }
        answered.await.map_err(|_| ReadFailed)
    }
}

thread_local! {
    /// Whether this async worker has a wake-up task queued already.
    static WAKE_QUEUED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl ReadThreads {
    /// Wakes a sleeping reader once this async worker has run the other tasks it has ready:
    /// from a task of the worker's own, queued behind them (one per burst), so that
    /// cancelling the read that queued it cannot lose the wake-up. Off an actix worker (no
    /// arbiter to queue it on), wakes one at once.
    fn wake_after_burst(&self) {
        if WAKE_QUEUED.with(std::cell::Cell::get) {
            return;
        }
        let wake = WakeOnDrop(Arc::clone(&self.0.0));
        // The task only drops `wake`: a worker that stops before running it drops it too.
        let queued = actix_rt::Arbiter::try_current()
            .is_some_and(|worker| worker.spawn(async move { drop(wake) }));
        if queued {
            WAKE_QUEUED.with(|flag| flag.set(true));
        }
    }
}

/// Wakes a sleeping reader when dropped, and lets this thread queue the next wake-up.
struct WakeOnDrop(Arc<Shared>);

impl Drop for WakeOnDrop {
    fn drop(&mut self) {
        WAKE_QUEUED.with(|queued| queued.set(false));
        wake_one(&self.0);
    }
}

/// Wakes one sleeping reader if a job waits and none is being woken yet.
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

fn serve(shared: &Shared, burst: &dyn Fn(&mut dyn FnMut())) {
    let mut queue = shared.queue.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        if !queue.jobs.is_empty() {
            let take = queue.jobs.len().min(MAX_BURST);
            let jobs: Vec<Job> = queue.jobs.drain(..take).collect();
            // More wait than this thread takes: another reader may take them meanwhile.
            queue.wake_one_for_jobs(&shared.ready);
            drop(queue);
            let mut jobs = jobs.into_iter();
            burst(&mut || jobs.by_ref().for_each(|job| job()));
            // A hook that did not run them all drops the rest: their callers see `ReadFailed`.
            drop(jobs);
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
        Arc::new(|run: &mut dyn FnMut()| run())
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
        });
        let threads = ReadThreads::start(1, burst).unwrap();
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
        let threads = ReadThreads::start(2, one_by_one()).unwrap();
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
        let threads = ReadThreads::start(1, one_by_one()).unwrap();
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
        let threads = ReadThreads::start(1, one_by_one()).unwrap();
        let failed = threads.run(|| -> u32 { panic!("a bug in a read") }).await;
        assert!(failed.is_err());
        assert_eq!(threads.run(|| 7).await.unwrap(), 7, "the thread lives on");
    }
}

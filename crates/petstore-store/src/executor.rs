//! Threads of the store's own that run work in bursts.
//!
//! Database work must not run on a caller's async worker: a read can wait (a page from the
//! disk, a lock held by a checkpoint, the network to a server), and that would stall every
//! connection the worker serves. A blocking pool keeps it off them, but at a price on a busy
//! core: each request wakes a thread of its own, so 32 requests in flight cost 32 thread
//! wake-ups and as many back. Here a few long-lived threads share one queue: a thread that
//! finds work waiting takes it without sleeping, and only an idle thread is woken, so a burst
//! of requests is served by one wake-up.
//!
//! What is generic lives here: the threads, the queue, the wake-ups, the answers and the
//! deadline. How many threads, how many jobs each takes, and how a burst of them runs is the
//! backend's ([`AnyStore::bursts`]; `sqlite/burst.rs`, `postgres/burst.rs`): a write is
//! answered only after the commit its writes went into, never before.
//!
//! A backend may also ask for a chore done every so often ([`Chore`]): it gets a thread of its
//! own, which stops with the others.
//!
//! When to wake a thread is the caller's choice ([`Wake`]): an async server can wake it after
//! the other tasks its worker has ready, so that the work those queue joins the same burst
//! instead of each waking a thread.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use petstore_core::{DomainError, Failure, RepoResult};

use crate::job::{Chore, JobStore, ReadJob, ReadNames, ThreadSpec, WriteJob, WriteNames};
use crate::store::AnyStore;

/// How the executor's threads are woken. The executor hands the hook each wake-up it needs
/// (at most one at a time per queue); the hook runs it now or later by dropping it. Dropping
/// it is the only way to run it, so a hook that loses it (a worker stopping) still wakes.
pub type Wake = Arc<dyn Fn(WakeUp) + Send + Sync>;

/// A pending wake-up of one of the executor's threads: dropping it wakes one if work waits.
pub struct WakeUp(Arc<dyn Waker>);

impl std::fmt::Debug for WakeUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WakeUp").finish_non_exhaustive()
    }
}

impl Drop for WakeUp {
    fn drop(&mut self) {
        self.0.wake();
    }
}

trait Waker: Send + Sync {
    fn wake(&self);
}

/// The reader and writer threads of one store. Cheap to clone; when the last clone goes, the
/// threads finish what is queued and exit.
#[derive(Clone)]
pub struct Executor {
    reads: Threads<ReadJob>,
    writes: Threads<WriteJob>,
    deadline: Option<Duration>,
    /// Stops the backend's chore thread, if it has one, when the last clone goes.
    _chore: Option<Arc<StopOnDrop>>,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

impl Executor {
    /// Starts the threads `store`'s backend asks for ([`AnyStore::bursts`]), woken through
    /// `wake`. Fails if a thread cannot be started: a service without them cannot serve.
    pub fn start(store: &AnyStore, wake: Wake) -> std::io::Result<Self> {
        let bursts = store.bursts();
        Ok(Self {
            reads: Threads::start("petstore-reader", bursts.readers, Arc::clone(&wake))?,
            writes: Threads::start("petstore-writer", bursts.writers, wake)?,
            deadline: bursts.deadline,
            _chore: bursts.chore.map(start_chore).transpose()?.map(Arc::new),
        })
    }

    /// How long a caller should wait for an answer in all, where the backend's waits are not
    /// bounded by this process (PostgreSQL: a server gone silent, a proxy that forwards
    /// nothing, leave a call waiting for minutes): past it a read is `Unavailable`, and a
    /// write `OutcomeUnknown` (it may yet commit). `None` on SQLite, whose every wait the
    /// store bounds itself. A read no thread has taken by then is never started.
    pub fn deadline(&self) -> Option<Duration> {
        self.deadline
    }

    /// Queues `work`, which only reads, for a reader thread; `answer` gets its result as soon
    /// as it returns. If `work` panics, `answer` is dropped uncalled. `work` may run twice:
    /// a read a read standby failed under (it died, say) runs again on the primary. Where the backend has a
    /// [deadline](Self::deadline), a read no thread has taken by then answers `Unavailable`
    /// without running: its caller has had its answer, and a read started after it would
    /// only take a connection from those still waited for.
    ///
    /// `names` names the row the work will read, if the caller knows it: a burst may fetch
    /// the rows of all its reads at once ([`Row`](crate::Row)); and how fresh its answer must be, which
    /// says whether a read standby may serve it ([`Freshness`](crate::Freshness)).
    pub fn read<T: Send + 'static>(
        &self,
        names: impl Into<ReadNames>,
        mut work: impl for<'b> FnMut(JobStore<'b>) -> RepoResult<T> + Send + 'static,
        answer: impl FnOnce(RepoResult<T>) + Send + 'static,
    ) {
        let queued = Instant::now();
        let start_by = self.deadline.map(|deadline| queued + deadline);
        let work = move |store: JobStore<'_>| {
            let taken = Instant::now();
            if start_by.is_some_and(|start_by| taken >= start_by) {
                return Err(DomainError::Unavailable(Failure::new(format!(
                    "the read waited {:?} for a reader thread; not started",
                    taken - queued
                ))));
            }
            work(store)
        };
        self.reads.queue(ReadJob::new(names, work, answer));
    }

    /// Queues `work`, which may write, for a writer thread; `answer` gets its result once
    /// the commit its writes went into has succeeded, or that commit's failure instead of a
    /// value. If `work` panics, `answer` is dropped uncalled (its writes were undone).
    ///
    /// `work` may be run again before it is answered (its writes undone in between), so it
    /// must have no effect outside the store: on PostgreSQL a burst whose shared transaction
    /// gives up runs each of its jobs again in a transaction of its own.
    ///
    /// `names` names the rows the work will change and the idempotency key it will look up,
    /// where the caller knows them: a burst may lock and read the rows of all its writes,
    /// and look up their keys, at once ([`WriteNames`]).
    pub fn write<T: Send + 'static>(
        &self,
        names: impl Into<WriteNames>,
        work: impl for<'b> FnMut(JobStore<'b>) -> RepoResult<T> + Send + 'static,
        answer: impl FnOnce(RepoResult<T>) + Send + 'static,
    ) {
        let WriteNames { rows, key } = names.into();
        self.writes
            .queue(WriteJob::new(rows, work, answer).naming_key(key));
    }
}

/// Threads sharing one queue of jobs `J`; dropping the last handle lets them finish the queue
/// and exit.
struct Threads<J> {
    shared: Arc<Shared<J>>,
    wake: Wake,
    _closer: Arc<Closer<J>>,
}

impl<J> Clone for Threads<J> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            wake: Arc::clone(&self.wake),
            _closer: Arc::clone(&self._closer),
        }
    }
}

struct Shared<J> {
    queue: Mutex<Queue<J>>,
    ready: Condvar,
    /// Signalled as each thread first waits for work: [`Threads::start`] returns only then.
    started: Condvar,
}

struct Queue<J> {
    jobs: VecDeque<J>,
    /// Threads asleep on the condition variable: only then does a new job need a wake-up.
    idle: usize,
    /// Of those, threads already woken and not yet running: a job needs no other wake-up.
    waking: usize,
    /// A wake-up is with the hook and not yet run: a job queued meanwhile needs no other.
    wake_pending: bool,
    /// Threads that have waited for work at least once.
    started: usize,
    closed: bool,
}

/// Closes the queue when the last handle goes.
struct Closer<J>(Arc<Shared<J>>);

impl<J> Drop for Closer<J> {
    fn drop(&mut self) {
        lock(&self.0.queue).closed = true;
        self.0.ready.notify_all();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section here leaves the queue consistent before it can panic.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<J: Send + 'static> Threads<J> {
    /// Starts the threads of `spec` (at least one) named `name-N`, each taking at most
    /// `spec.burst` of the jobs it finds waiting at once and handing them to `spec.run`.
    /// Returns once every thread waits for work, so that the first jobs queued are taken
    /// through the wake hook like any later ones, not by a thread still starting.
    fn start(name: &str, spec: ThreadSpec<J>, wake: Wake) -> std::io::Result<Self> {
        let ThreadSpec { count, burst, run } = spec;
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                idle: 0,
                waking: 0,
                wake_pending: false,
                started: 0,
                closed: false,
            }),
            ready: Condvar::new(),
            started: Condvar::new(),
        });
        let closer = Arc::new(Closer(Arc::clone(&shared)));
        let count = count.max(1);
        for n in 0..count {
            let shared = Arc::clone(&shared);
            let run = Arc::clone(&run);
            std::thread::Builder::new()
                .name(format!("{name}-{n}"))
                .spawn(move || serve(&shared, burst.max(1), &*run))?;
        }
        drop(
            shared
                .started
                .wait_while(lock(&shared.queue), |queue| queue.started < count)
                .unwrap_or_else(PoisonError::into_inner),
        );
        Ok(Self {
            shared,
            wake,
            _closer: closer,
        })
    }

    /// Queues `job`, and makes sure a thread will take it.
    fn queue(&self, job: J) {
        let wake_up = {
            let mut queue = lock(&self.shared.queue);
            queue.jobs.push_back(job);
            let needed = queue.idle > queue.waking && !queue.wake_pending;
            queue.wake_pending |= needed;
            needed
        };
        if wake_up {
            (self.wake)(WakeUp(Arc::clone(&self.shared) as Arc<dyn Waker>));
        }
    }
}

impl<J: Send> Waker for Shared<J> {
    fn wake(&self) {
        let mut queue = lock(&self.queue);
        queue.wake_pending = false;
        queue.wake_one_for_jobs(&self.ready);
    }
}

impl<J> Queue<J> {
    /// Wakes one thread asleep on `ready` if a job waits and every thread being woken already
    /// has one.
    fn wake_one_for_jobs(&mut self, ready: &Condvar) {
        if !self.jobs.is_empty() && self.idle > self.waking {
            self.waking += 1;
            ready.notify_one();
        }
    }
}

/// Tells a chore's thread to stop, when dropped.
struct StopOnDrop(Arc<(Mutex<bool>, Condvar)>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let (stopped, changed) = &*self.0;
        *lock(stopped) = true;
        changed.notify_all();
    }
}

/// Runs `chore` every `chore.every` on a thread of its own, until the handle returned goes.
fn start_chore(mut chore: Chore) -> std::io::Result<StopOnDrop> {
    let stop = Arc::new((Mutex::new(false), Condvar::new()));
    let stopping = Arc::clone(&stop);
    std::thread::Builder::new()
        .name("petstore-chore".to_owned())
        .spawn(move || {
            let (stopped, changed) = &*stopping;
            loop {
                let (guard, _) = changed
                    .wait_timeout_while(lock(stopped), chore.every, |stopped| !*stopped)
                    .unwrap_or_else(PoisonError::into_inner);
                if *guard {
                    return;
                }
                drop(guard);
                // A chore that panics is not run again; the service goes on without it.
                if catch_unwind(AssertUnwindSafe(&mut chore.run)).is_err() {
                    return;
                }
            }
        })?;
    Ok(StopOnDrop(stop))
}

fn serve<J>(shared: &Shared<J>, max_burst: usize, run: &dyn Fn(Vec<J>)) {
    let mut queue = lock(&shared.queue);
    let mut first_wait = true;
    loop {
        if !queue.jobs.is_empty() {
            let take = queue.jobs.len().min(max_burst);
            let jobs: Vec<J> = queue.jobs.drain(..take).collect();
            // More wait than this thread takes: another thread may take them meanwhile.
            queue.wake_one_for_jobs(&shared.ready);
            drop(queue);
            // Each job catches its own work's panics; should the burst itself panic, the jobs
            // it had not run are dropped (their callers get no answer) and the thread lives on.
            let _ = catch_unwind(AssertUnwindSafe(|| run(jobs)));
            queue = lock(&shared.queue);
        } else if queue.closed {
            return;
        } else {
            queue.idle += 1;
            if std::mem::take(&mut first_wait) {
                queue.started += 1;
                shared.started.notify_all();
            }
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
mod tests;

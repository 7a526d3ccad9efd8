//! Threads of the store's own that run work in bursts.
//!
//! Database work must not run on a caller's async worker: a read can wait (a page from the
//! disk, a lock held by a checkpoint), and that would stall every connection the worker serves.
//! A blocking pool keeps it off them, but at a price on a busy core: each request wakes a
//! thread of its own, so 32 requests in flight cost 32 thread wake-ups and as many back. Here a
//! few long-lived threads share one queue: a thread that finds work waiting takes it without
//! sleeping, and only an idle thread is woken, so a burst of requests is served by one wake-up.
//!
//! A thread runs the jobs it takes at once as one burst (`burst.rs`), handing each a
//! [`JobStore`] over it: reads share one read transaction; writes share one turn of the writer
//! and one commit after the last. A write's answer is given only after that commit, here: the
//! caller's `answer` is never called before its write is durable, and if the commit fails,
//! every write of the burst answers that failure instead of its value.
//!
//! When to wake a thread is the caller's choice ([`Wake`]): an async server can wake it after
//! the other tasks its worker has ready, so that the work those queue joins the same burst
//! instead of each waking a thread.

use std::collections::VecDeque;
use std::ops::RangeInclusive;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use petstore_core::{DomainError, Failure, RepoResult};

use crate::postgres::PgStore;
use crate::postgres::burst::{PgWriteBurst, Savepoints};
use crate::sqlite::SqliteStore;
use crate::sqlite::burst::{ReadBurst, WriteBurst};
use crate::store::{AnyStore, JobStore};

/// Reads one thread takes from the queue at once, at most: more would make the last of them
/// wait longer for the others, for little more saved.
const READ_BURST: usize = 16;

/// Writes the writer thread takes at once, at most: as many as may share one commit anyway,
/// enough for every connection of a busy client pool.
const WRITE_BURST: usize = crate::sqlite::writer::MAX_BATCH;

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

/// A queued read: runs its work on the burst's store and answers at once.
type ReadJob = Box<dyn for<'b> FnOnce(JobStore<'b>) + Send>;

/// A queued write, and when it was queued: a write waits for the writer at most the store's
/// connection time-out from then, whatever was queued before it.
struct WriteJob {
    queued: Instant,
    write: Box<dyn QueuedWrite>,
}

/// A write's work and its caller's answer, type-erased for the queue. The work may run more
/// than once: a PostgreSQL burst that runs its writes without savepoints and meets a failure
/// undoes them all and runs them again with savepoints (`postgres/burst.rs`). Only the last
/// run's result is answered, and only after the commit its writes went into.
trait QueuedWrite: Send {
    /// Runs the work on `store`, keeping its result in place of any earlier run's.
    fn run(&mut self, store: JobStore<'_>);
    /// Answers the last run's result, or `failed` (the commit's failure) in place of a value.
    /// A work that panicked in its last run is not answered: its answer is dropped.
    fn settle(self: Box<Self>, failed: Option<&DomainError>);
    /// Answers `refused` without running.
    fn refuse(self: Box<Self>, refused: &DomainError);
}

struct Write<W, A, T> {
    work: W,
    answer: A,
    /// The last run's result; `None` before a run and after one that panicked.
    result: Option<RepoResult<T>>,
}

impl<W, A, T> QueuedWrite for Write<W, A, T>
where
    W: for<'b> FnMut(JobStore<'b>) -> RepoResult<T> + Send,
    A: FnOnce(RepoResult<T>) + Send,
    T: Send,
{
    fn run(&mut self, store: JobStore<'_>) {
        self.result = catch_unwind(AssertUnwindSafe(|| (self.work)(store))).ok();
    }

    fn settle(self: Box<Self>, failed: Option<&DomainError>) {
        let Some(result) = self.result else {
            return;
        };
        (self.answer)(match (result, failed) {
            (Ok(_), Some(failure)) => Err(failure.clone()),
            (result, _) => result,
        });
    }

    fn refuse(self: Box<Self>, refused: &DomainError) {
        (self.answer)(Err(refused.clone()));
    }
}

/// The reader threads of one store, and on SQLite its writer thread. Cheap to clone; when the
/// last clone goes, the threads finish what is queued and exit.
#[derive(Clone)]
pub struct Executor {
    reads: Threads<ReadJob>,
    /// None until [`Executor::with_postgres_writers`] adds them, on PostgreSQL.
    writes: Option<Threads<WriteJob>>,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor").finish_non_exhaustive()
    }
}

impl Executor {
    /// Starts the threads for `store`: one reader per core this process may use, at most 4
    /// (a read is CPU work here, and more threads than cores only switch between each other),
    /// and one writer (SQLite has one writer connection; a second thread would only wait for
    /// it).
    pub fn start(store: &SqliteStore, wake: Wake) -> std::io::Result<Self> {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        let reading = store.clone();
        let reads = Threads::start(
            "petstore-reader",
            cores.min(4),
            READ_BURST,
            Arc::clone(&wake),
            move |jobs: Vec<ReadJob>| {
                let burst = ReadBurst::new(&reading);
                for job in jobs {
                    job(JobStore::reads(&burst));
                }
            },
        )?;
        let writing = store.clone();
        let writes = Threads::start(
            "petstore-writer",
            1,
            WRITE_BURST,
            wake,
            move |jobs: Vec<WriteJob>| write_burst(&writing, jobs),
        )?;
        Ok(Self {
            reads,
            writes: Some(writes),
        })
    }

    /// Starts `count` reader threads for a store whose reads each take a connection of the
    /// pool (PostgreSQL). A thread that wakes takes the reads queued at once (at most
    /// `max_burst`) and runs them one after another, each on its own: one wake-up of a thread
    /// and one of the caller's worker for the lot, where the blocking pool wakes a thread per
    /// read (`docs/performance.md`, "PostgreSQL against pgbench"). No writers: those are
    /// added by [`Executor::with_postgres_writers`].
    pub fn start_readers(
        store: &AnyStore,
        wake: Wake,
        count: usize,
        max_burst: usize,
    ) -> std::io::Result<Self> {
        let reading = store.clone();
        let reads = Threads::start(
            "petstore-reader",
            count,
            max_burst,
            wake,
            move |jobs: Vec<ReadJob>| {
                for job in jobs {
                    job(JobStore::direct(&reading));
                }
            },
        )?;
        Ok(Self {
            reads,
            writes: None,
        })
    }

    /// Adds `count` writer threads for PostgreSQL: a thread that wakes takes the writes
    /// queued at once (at most `max_burst`) and runs them in one transaction
    /// ([`PgWriteBurst`]). A write waits on the server's row locks, so several bursts are in
    /// flight at once, one per thread.
    pub fn with_postgres_writers(
        mut self,
        store: &PgStore,
        wake: Wake,
        count: usize,
        max_burst: usize,
    ) -> std::io::Result<Self> {
        let writing = store.clone();
        self.writes = Some(Threads::start(
            "petstore-writer",
            count,
            max_burst,
            wake,
            move |jobs: Vec<WriteJob>| postgres_write_burst(&writing, jobs),
        )?);
        Ok(self)
    }

    /// Whether [`Executor::write`] has a writer to queue for (SQLite).
    pub fn takes_writes(&self) -> bool {
        self.writes.is_some()
    }

    /// Queues `work`, which only reads, for a reader thread; `answer` gets its result as soon
    /// as it returns. If `work` panics, `answer` is dropped uncalled.
    pub fn read<T: Send + 'static>(
        &self,
        work: impl for<'b> FnOnce(JobStore<'b>) -> T + Send + 'static,
        answer: impl FnOnce(T) + Send + 'static,
    ) {
        self.reads.queue(Box::new(move |store| {
            if let Ok(value) = catch_unwind(AssertUnwindSafe(|| work(store))) {
                answer(value);
            }
        }));
    }

    /// Queues `work` as [`Executor::read`] does, to be started by `start_by`: a read no thread
    /// has taken by then answers `Unavailable` without running. Its caller answered its client
    /// by that time; a read started after it would only take a connection from those still
    /// waited for.
    pub fn read_by<T: Send + 'static>(
        &self,
        start_by: Instant,
        work: impl for<'b> FnOnce(JobStore<'b>) -> RepoResult<T> + Send + 'static,
        answer: impl FnOnce(RepoResult<T>) + Send + 'static,
    ) {
        let queued = Instant::now();
        self.read(
            move |store| {
                let taken = Instant::now();
                if taken >= start_by {
                    return Err(DomainError::Unavailable(Failure::new(format!(
                        "the read waited {:?} for a reader thread; not started",
                        taken - queued
                    ))));
                }
                work(store)
            },
            answer,
        );
    }

    /// Queues `work`, which may write, for the writer thread; `answer` gets its result once
    /// the commit its writes share has succeeded, or that commit's failure instead of a value.
    /// If `work` panics, `answer` is dropped uncalled (its writes were undone). Without a
    /// writer ([`Executor::takes_writes`]), `answer` gets `Unavailable` at once.
    ///
    /// `work` may be run again before it is answered (its writes undone in between), so it
    /// must have no effect outside the store: on PostgreSQL a burst's writes first run without
    /// savepoints, and all of them run again with savepoints if one fails.
    pub fn write<T: Send + 'static>(
        &self,
        work: impl for<'b> FnMut(JobStore<'b>) -> RepoResult<T> + Send + 'static,
        answer: impl FnOnce(RepoResult<T>) + Send + 'static,
    ) {
        let write = Box::new(Write {
            work,
            answer,
            result: None,
        });
        match &self.writes {
            Some(writes) => writes.queue(WriteJob {
                queued: Instant::now(),
                write,
            }),
            None => write.refuse(&DomainError::Unavailable(Failure::new(
                "this store's executor takes no writes",
            ))),
        }
    }
}

/// Runs the writes of a burst in one turn of the writer, and answers them after it ends.
///
/// The turn must begin by the time its oldest write has waited the connection time-out: a
/// write queued behind a burst that waited for another process's lock waits no longer than
/// that in all. A write that has waited so long already answers so without running. If the
/// writer cannot be taken in time (busy, another process's lock, `BEGIN` failed, the file
/// gone), every write answers why at once, rather than each waiting as long again.
fn write_burst(store: &SqliteStore, jobs: Vec<WriteJob>) {
    let wait = store.write_wait();
    let mut jobs = in_time(jobs, wait);
    let Some(oldest) = jobs.iter().map(|job| job.queued).min() else {
        return;
    };
    match store.turn_by(oldest + wait) {
        Ok(turn) => {
            let burst = WriteBurst::new(store, turn);
            for job in &mut jobs {
                job.write.run(JobStore::writes(&burst));
            }
            let outcome = burst.finish();
            for job in jobs {
                job.write.settle(outcome.as_ref().err());
            }
        }
        Err(refused) => refuse(jobs, &refused),
    }
}

/// The jobs that have waited less than `wait`; the others answer so at once, without running.
fn in_time(jobs: Vec<WriteJob>, wait: Duration) -> Vec<WriteJob> {
    let now = Instant::now();
    let (late, jobs): (Vec<WriteJob>, Vec<WriteJob>) =
        jobs.into_iter().partition(|job| job.queued + wait <= now);
    if !late.is_empty() {
        let waited = DomainError::Unavailable(Failure::new(format!(
            "the write waited {wait:?} for the database's writer"
        )));
        refuse(late, &waited);
    }
    jobs
}

/// Runs the writes of a burst on PostgreSQL in as few transactions as it can
/// ([`PgWriteBurst`]), and answers each job after the `COMMIT`s its writes went into. A job
/// that has waited the connection time-out answers so without running. If no connection can
/// be had, every job answers why at once.
///
/// Several jobs first run without savepoints, which saves each write a round trip and a
/// subtransaction on the server. If that burst gives up (a write failed or was refused after
/// another kept its changes, or a job read after one), its transaction is rolled back and every
/// job runs again with savepoints, where a write that fails is undone alone; and the next
/// bursts take savepoints for a while ([`PgStore::burst_takes_savepoints`]).
fn postgres_write_burst(store: &PgStore, jobs: Vec<WriteJob>) {
    let mut jobs = in_time(jobs, store.write_wait());
    if jobs.is_empty() {
        return;
    }
    let savepoints = if jobs.len() > 1 && !store.burst_takes_savepoints() {
        Savepoints::Skipped
    } else {
        Savepoints::Taken
    };
    let mut burst = match PgWriteBurst::start(store, savepoints) {
        Ok(burst) => burst,
        Err(refused) => return refuse(jobs, &refused),
    };
    let mut segments = run_writes(&burst, &mut jobs);
    if burst.gave_up() {
        store.burst_gave_up();
        burst = match burst.again_with_savepoints() {
            Ok(burst) => burst,
            Err(refused) => return refuse(jobs, &refused),
        };
        segments = run_writes(&burst, &mut jobs);
    }
    let outcomes = burst.finish();
    for (job, segments) in jobs.into_iter().zip(segments) {
        // The first commit of the job's writes that failed, if one did.
        let failed = segments
            .and_then(|segments| outcomes.get(segments))
            .and_then(|outcomes| outcomes.iter().find_map(|o| o.as_ref().err()));
        job.write.settle(failed);
    }
}

/// Runs each job's work on `burst`, until the burst gives up, and gives back the segments
/// each job's writes went into.
fn run_writes(
    burst: &PgWriteBurst<'_>,
    jobs: &mut [WriteJob],
) -> Vec<Option<RangeInclusive<usize>>> {
    let mut segments = Vec::with_capacity(jobs.len());
    for job in jobs {
        if burst.gave_up() {
            break;
        }
        burst.start_job();
        job.write.run(JobStore::postgres_writes(burst));
        segments.push(burst.job_segments());
    }
    segments
}

/// Answers each of `jobs` with `refused`, without running it.
fn refuse(jobs: Vec<WriteJob>, refused: &DomainError) {
    for job in jobs {
        job.write.refuse(refused);
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
}

struct Queue<J> {
    jobs: VecDeque<J>,
    /// Threads asleep on the condition variable: only then does a new job need a wake-up.
    idle: usize,
    /// Of those, threads already woken and not yet running: a job needs no other wake-up.
    waking: usize,
    /// A wake-up is with the hook and not yet run: a job queued meanwhile needs no other.
    wake_pending: bool,
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
    /// Starts `count` threads (at least one) named `name-N`, which take at most `max_burst`
    /// of the jobs they find waiting at once and hand them to `run`.
    fn start(
        name: &str,
        count: usize,
        max_burst: usize,
        wake: Wake,
        run: impl Fn(Vec<J>) + Clone + Send + 'static,
    ) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                idle: 0,
                waking: 0,
                wake_pending: false,
                closed: false,
            }),
            ready: Condvar::new(),
        });
        let closer = Arc::new(Closer(Arc::clone(&shared)));
        for n in 0..count.max(1) {
            let shared = Arc::clone(&shared);
            let run = run.clone();
            std::thread::Builder::new()
                .name(format!("{name}-{n}"))
                .spawn(move || serve(&shared, max_burst.max(1), &run))?;
        }
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

fn serve<J>(shared: &Shared<J>, max_burst: usize, run: &impl Fn(Vec<J>)) {
    let mut queue = lock(&shared.queue);
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
            queue = shared
                .ready
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
            queue.idle -= 1;
            queue.waking = queue.waking.saturating_sub(1);
        }
    }
}

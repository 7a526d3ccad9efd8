//! What every handler shares: the use cases and the clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::FutureExt as _;
use futures_util::future::Either;
use petstore_core::{Actor, Clock, Currency, DomainError, EventListener, Service, Settings};
use petstore_store::{AnyStore, Executor, Freshness, JobStore, ReadNames, Wake, WakeUp};
/// What a handler names of the rows its read or write will need, and of the idempotency key
/// its write will look up ([`AppState::read_row`], [`AppState::write_row`]).
pub use petstore_store::{KeyName, Row, WriteNames};
use tokio::sync::oneshot;

use crate::context;
use crate::error::ApiError;
use crate::metrics::{Appended, Metrics};
use crate::traces::{ChildSpan, Traces};

mod answers;
mod change_feed;
mod delivery_settings;
mod key_cache;

use answers::{answer, by_deadline, ending, in_span};
pub use change_feed::ChangeFeed;
pub use delivery_settings::DeliverySettings;
pub use key_cache::KeyCache;

/// The use cases as the HTTP layer runs them, on the store one piece of work is handed (see
/// [`AppState::read`]), with an injectable clock.
pub type PetService<'s> = Service<JobStore<'s>, Arc<dyn Clock>>;

/// The use cases over the store itself, from which each piece of work's are made.
type BaseService = Service<AnyStore, Arc<dyn Clock>>;

/// The store's executor, woken the way an actix worker should: after the other tasks the
/// worker has ready, from a task queued behind them, so that the work those tasks queue joins
/// the same burst instead of each waking a thread. Off an actix worker, at once.
fn start_executor(store: &AnyStore) -> std::io::Result<Executor> {
    let wake: Wake = Arc::new(|wake_up: WakeUp| {
        // The task only drops `wake_up`, which wakes; a worker that stops before running it
        // drops it too, and without a worker it is dropped here.
        if let Some(worker) = actix_rt::Arbiter::try_current() {
            worker.spawn(async move { drop(wake_up) });
        }
    });
    Executor::start(store, wake)
}

/// Shared by all workers and handlers; cheap to clone.
#[derive(Clone)]
pub struct AppState {
    service: Arc<BaseService>,
    clock: Arc<dyn Clock>,
    metrics: Arc<Metrics>,
    key_cache: Arc<KeyCache>,
    changes: Arc<ChangeFeed>,
    stopping: Arc<AtomicBool>,
    delivery: Arc<DeliverySettings>,
    /// Where the work runs: reads and writes, on either backend.
    executor: Executor,
    /// Where spans go, when traces are exported (`--otlp-endpoint`).
    traces: Option<Traces>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("store", self.service.store())
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// The state for a store and a clock (tests pass a `ManualClock`). Fails if the store's
    /// threads cannot be started.
    pub fn new(store: AnyStore, clock: Arc<dyn Clock>) -> std::io::Result<Self> {
        Self::with_settings(store, clock, Settings::default())
    }

    /// The state for a store, a clock and the operator's settings for the domain. Fails if
    /// the store's threads cannot be started.
    pub fn with_settings(
        store: AnyStore,
        clock: Arc<dyn Clock>,
        settings: Settings,
    ) -> std::io::Result<Self> {
        let executor = start_executor(&store)?;
        Ok(Self {
            service: Arc::new(
                Service::with_clock(store, Arc::clone(&clock)).with_settings(settings),
            ),
            clock,
            metrics: Arc::new(Metrics::new()),
            key_cache: Arc::new(KeyCache::default()),
            changes: Arc::new(ChangeFeed::default()),
            stopping: Arc::new(AtomicBool::new(false)),
            delivery: Arc::new(DeliverySettings::default()),
            executor,
            traces: None,
        })
    }

    /// The same state, recording spans with `traces`.
    pub fn with_traces(mut self, traces: Traces) -> Self {
        self.traces = Some(traces);
        self
    }

    /// The same state, its writes outside a request recorded as `actor`'s: the command
    /// line's are the operator's, a chore's the service's (`Actor::chore`). A request's
    /// writes record who made the request, whatever state serves it.
    pub fn acting_as(&self, actor: Actor) -> Self {
        Self {
            service: Arc::new(self.service.acting_as(actor)),
            ..self.clone()
        }
    }

    /// Where spans go; `None` when traces are off.
    pub fn traces(&self) -> Option<&Traces> {
        self.traces.as_ref()
    }

    /// The same state with these webhook delivery settings.
    pub fn with_delivery(mut self, settings: DeliverySettings) -> Self {
        self.delivery = Arc::new(settings);
        self
    }

    /// How webhook deliveries are made.
    pub fn delivery(&self) -> &DeliverySettings {
        &self.delivery
    }

    /// The clock requests are judged by (deprecation sunsets).
    pub fn clock(&self) -> &dyn Clock {
        &*self.clock
    }

    /// The process's metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Marks the service as stopping: open event streams end, so that the drain can finish.
    pub fn begin_shutdown(&self) {
        self.stopping.store(true, Ordering::Relaxed);
    }

    /// Whether the service is stopping.
    pub fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }

    /// What this node has seen change (event streams wait on it).
    pub fn changes(&self) -> &ChangeFeed {
        &self.changes
    }

    /// Recently verified API keys.
    pub fn key_cache(&self) -> &KeyCache {
        &self.key_cache
    }

    /// The currency the shop prices in.
    pub fn currency(&self) -> Currency {
        self.service.currency()
    }

    /// The store, for health checks.
    pub fn store(&self) -> &AnyStore {
        self.service.store()
    }

    /// Runs a use case that only reads, on the store's reader threads (on SQLite the reads
    /// queued at once share one read transaction; on PostgreSQL a thread takes them one after
    /// another), answered by the executor's deadline where it has one.
    ///
    /// The work is handed over when this is called, not when the answer is first awaited:
    /// the future returned holds only the way back, so a handler's future does not carry the
    /// work's captures twice (bench/profile counts what a larger future costs in `malloc`).
    ///
    /// With read standbys a standby may serve it, as fresh as the request asks
    /// ([`crate::consistency`]): by default it sees every write acknowledged before the
    /// request was sent. So `work` may run twice: a read a standby failed under (it died
    /// since its check) runs again on the primary.
    pub fn read<T: Send + 'static>(
        &self,
        work: impl for<'s> FnMut(&PetService<'s>) -> Result<T, DomainError> + Send + 'static,
    ) -> impl Future<Output = Result<T, ApiError>> {
        let span = self.store_span("store read");
        ending(span, self.hand_over_read(None, context::requested(), work))
    }

    /// [`Self::read`] of work that reads `row` (the pet a request's path names): a burst of
    /// reads may fetch the rows they name at once ([`Row`]).
    pub fn read_row<T: Send + 'static>(
        &self,
        row: Row,
        work: impl for<'s> FnMut(&PetService<'s>) -> Result<T, DomainError> + Send + 'static,
    ) -> impl Future<Output = Result<T, ApiError>> {
        let span = self.store_span("store read");
        ending(
            span,
            self.hand_over_read(Some(row), context::requested(), work),
        )
    }

    /// [`Self::read`] on the primary, whatever the request asks: the feed, whose reads stamp
    /// the events committed so far, and what follows it (the live stream, webhook
    /// deliveries) keep its order and have no gap only there.
    pub fn read_primary<T: Send + 'static>(
        &self,
        work: impl for<'s> FnMut(&PetService<'s>) -> Result<T, DomainError> + Send + 'static,
    ) -> impl Future<Output = Result<T, ApiError>> {
        let span = self.store_span("store read");
        ending(span, self.hand_over_read(None, Freshness::Primary, work))
    }

    /// Runs a use case that may write, on the store's writer threads: the writes a thread
    /// takes at once share one transaction and one commit, and each is answered only after
    /// it (or by the executor's deadline, where it has one). Off the async workers: the store
    /// is synchronous and a transaction may wait on a lock.
    /// Handed over when called, as [`Self::read`].
    ///
    /// `work` may run more than once before its answer (its writes undone in between: see
    /// [`Executor::write`]), so it takes what it needs by reference or by clone.
    pub fn write<T: Send + 'static>(
        &self,
        work: impl for<'s> FnMut(&PetService<'s>) -> Result<T, DomainError> + Send + 'static,
    ) -> impl Future<Output = Result<T, ApiError>> + 'static {
        self.write_row(None, work)
    }

    /// [`Self::write`] of work that changes the row and looks up the idempotency key that
    /// `names` names, where the request names them (the pet an order is for, its
    /// `Idempotency-Key`): a burst of writes may lock and read the rows, and look up the
    /// keys, they name at once.
    pub fn write_row<T: Send + 'static>(
        &self,
        names: impl Into<WriteNames>,
        work: impl for<'s> FnMut(&PetService<'s>) -> Result<T, DomainError> + Send + 'static,
    ) -> impl Future<Output = Result<T, ApiError>> + 'static {
        let span = self.store_span("store write");
        ending(span, self.hand_over_write(names.into(), work))
    }

    /// A span for a store call, when traces are on and the call is made for a traced request.
    fn store_span(&self, name: &'static str) -> Option<ChildSpan> {
        let traces = self.traces.as_ref()?;
        let system = match self.store() {
            AnyStore::Sqlite(_) => "sqlite",
            AnyStore::Postgres(_) => "postgresql",
        };
        traces.store_call(name, system)
    }

    /// Hands a read to where [`Self::read`] says, and gives back its answer to come.
    fn hand_over_read<T: Send + 'static>(
        &self,
        row: Option<Row>,
        freshness: Freshness,
        mut work: impl for<'s> FnMut(&PetService<'s>) -> Result<T, DomainError> + Send + 'static,
    ) -> impl Future<Output = Result<T, ApiError>> + 'static {
        let service = Arc::clone(&self.service);
        let work = in_span(move |store: JobStore<'_>| work(&service.over(store)));
        let (answer, answered) = oneshot::channel();
        self.executor
            .read(ReadNames { row, freshness }, work, move |result| {
                let _ = answer.send(result);
            });
        self.answer_of_executor(false, answered)
    }

    /// Hands a write to where [`Self::write`] says, and gives back its answer to come.
    fn hand_over_write<T: Send + 'static>(
        &self,
        names: WriteNames,
        mut work: impl for<'s> FnMut(&PetService<'s>) -> Result<T, DomainError> + Send + 'static,
    ) -> impl Future<Output = Result<T, ApiError>> + 'static {
        let service = Arc::clone(&self.service);
        let span = tracing::Span::current();
        // Who asks and the trace they ask in, as the request's door made them: every write
        // of the request records them with its events, whatever its handler does. Outside a
        // request, the state's own (`acting_as`).
        let cause = context::cause();
        // What the write appends, for the shop's counters once its commit is known.
        let appended = Arc::new(Appended::default());
        let run_appended = Arc::clone(&appended);
        let work = move |store: JobStore<'_>| {
            let _entered = span.enter();
            run_appended.new_run();
            let listener: Arc<dyn EventListener> = run_appended.clone();
            let shop = service.over(store).telling(listener);
            match &cause {
                Some(cause) => work(&shop.with_cause(cause.clone())),
                None => work(&shop),
            }
        };
        let (answer, answered) = oneshot::channel();
        self.executor.write(names, work, move |result| {
            let _ = answer.send(result);
        });
        // Asked once the answer is in: the position was kept before the commit's jobs were
        // answered, so it is at or past this write's commit.
        let store = Arc::clone(&self.service);
        let metrics = Arc::clone(&self.metrics);
        self.answer_of_executor(true, answered)
            .inspect(move |answer| {
                if answer.is_ok() {
                    context::written(store.store().commit_position());
                    metrics.committed(&appended);
                }
            })
    }

    /// The answer to come of work queued on the executor: by its deadline, where it has one,
    /// whatever the network does ([`by_deadline`]).
    fn answer_of_executor<T: 'static>(
        &self,
        writes: bool,
        answered: oneshot::Receiver<Result<T, DomainError>>,
    ) -> impl Future<Output = Result<T, ApiError>> + 'static {
        match self.executor.deadline() {
            Some(deadline) => Either::Right(by_deadline(deadline, writes, answered)),
            None => Either::Left(answered.map(self::answer)),
        }
    }
}

#[cfg(test)]
mod tests;

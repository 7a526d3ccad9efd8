//! What every handler shares: the use cases and the clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use actix_web::web;
use petstore_core::{Clock, DomainError, Service, Settings};
use petstore_store::AnyStore;

use crate::auth::KeyCache;
use crate::bursts::{Burst, BurstThreads};
use crate::changes::ChangeFeed;
use crate::delivery::DeliverySettings;
use crate::error::ApiError;
use crate::metrics::Metrics;

/// The use cases as the HTTP layer runs them: on SQLite or PostgreSQL, with an injectable
/// clock.
pub type PetService = Service<AnyStore, Arc<dyn Clock>>;

/// One reader thread per core this process may use, at most 4: on SQLite a read is CPU work,
/// and more threads than cores only add switches between them. `None` (reads then take the
/// blocking pool) if no thread could be started.
fn start_readers(store: &AnyStore) -> Option<BurstThreads> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let store = store.clone();
    // Reads a reader thread takes at once were all queued before it took them: sharing one
    // snapshot, each still sees every write committed before it was asked for.
    let burst: Burst = Arc::new(move |run: &mut dyn FnMut()| {
        store.sharing_reads(run);
        Ok(())
    });
    started(
        "reader",
        BurstThreads::start("petstore-reader", cores.min(4), READ_BURST, burst),
    )
}

/// Reads a reader thread takes from the queue at once, at most: more would make the last of
/// them wait longer for the others, for little more saved.
const READ_BURST: usize = 16;

/// One writer thread: SQLite has one writer connection, so a second thread would only wait
/// for it. It runs the writes queued at once in the writer's transaction, each in its own
/// savepoint, and commits once after the last (`AnyStore::sharing_writes`); their answers go
/// back after that commit. `None` (writes then take the blocking pool, and group commit
/// forms among its threads) if the thread could not be started.
fn start_writer(store: &AnyStore) -> Option<BurstThreads> {
    let store = store.clone();
    let burst: Burst = Arc::new(move |run: &mut dyn FnMut()| store.sharing_writes(run));
    started(
        "writer",
        BurstThreads::start("petstore-writer", 1, WRITE_BURST, burst),
    )
}

/// Writes the writer thread takes at once, at most: as many as may share one commit anyway
/// (the store's batch limit), enough for every connection of a busy client pool.
const WRITE_BURST: usize = 64;

fn started(what: &str, threads: std::io::Result<BurstThreads>) -> Option<BurstThreads> {
    threads
        .inspect_err(|error| {
            tracing::warn!(%error, "cannot start the {what} threads; the blocking pool runs their work");
        })
        .ok()
}

/// Shared by all workers and handlers; cheap to clone.
#[derive(Clone)]
pub struct AppState {
    service: Arc<PetService>,
    clock: Arc<dyn Clock>,
    metrics: Arc<Metrics>,
    key_cache: Arc<KeyCache>,
    changes: Arc<ChangeFeed>,
    stopping: Arc<AtomicBool>,
    delivery: Arc<DeliverySettings>,
    /// Where reads run on SQLite; on PostgreSQL, reads take the blocking pool like writes.
    readers: Option<BurstThreads>,
    /// Where writes run on SQLite; on PostgreSQL, they take the blocking pool: there many
    /// run at once, each waiting on the server.
    writer: Option<BurstThreads>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("store", self.service.store())
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// The state for a store and a clock (tests pass a `ManualClock`).
    pub fn new(store: AnyStore, clock: Arc<dyn Clock>) -> Self {
        Self::with_settings(store, clock, Settings::default())
    }

    /// The state for a store, a clock and the operator's settings for the domain.
    pub fn with_settings(store: AnyStore, clock: Arc<dyn Clock>, settings: Settings) -> Self {
        let in_process = store.works_in_process();
        let readers = in_process.then(|| start_readers(&store)).flatten();
        let writer = in_process.then(|| start_writer(&store)).flatten();
        Self {
            service: Arc::new(
                Service::with_clock(store, Arc::clone(&clock)).with_settings(settings),
            ),
            clock,
            metrics: Arc::new(Metrics::new()),
            key_cache: Arc::new(KeyCache::default()),
            changes: Arc::new(ChangeFeed::default()),
            stopping: Arc::new(AtomicBool::new(false)),
            delivery: Arc::new(DeliverySettings::default()),
            readers,
            writer,
        }
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

    /// The store, for health checks.
    pub fn store(&self) -> &AnyStore {
        self.service.store()
    }

    /// Runs a use case that only reads: on the reader threads on SQLite (see the `bursts`
    /// module), on the blocking pool otherwise.
    pub async fn read<T: Send + 'static>(
        &self,
        work: impl FnOnce(&PetService) -> Result<T, DomainError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let service = Arc::clone(&self.service);
        match &self.readers {
            Some(readers) => answer(readers.run(move || work(&service)).await),
            None => answer(web::block(move || work(&service)).await),
        }
    }

    /// Runs a use case that may write: on the writer thread on SQLite, whose writes are
    /// acknowledged only after the commit they share (see the `bursts` module); on the
    /// blocking pool otherwise. Either way off the async workers: the store is synchronous
    /// and a transaction may wait on a lock.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&PetService) -> Result<T, DomainError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let service = Arc::clone(&self.service);
        match &self.writer {
            Some(writer) => answer(writer.run_settled(move || work(&service)).await),
            None => answer(web::block(move || work(&service)).await),
        }
    }
}

/// What a use case run on another thread answers: its result, or a 500 (logged) when the
/// thread gave none back (the use case panicked, or was cancelled).
fn answer<T>(
    outcome: Result<Result<T, DomainError>, impl std::fmt::Display>,
) -> Result<T, ApiError> {
    match outcome {
        Ok(result) => result.map_err(ApiError::from),
        Err(error) => {
            tracing::error!(%error, "a use case panicked or was cancelled");
            Err(ApiError::internal())
        }
    }
}

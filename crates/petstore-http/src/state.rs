//! What every handler shares: the use cases and the clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use actix_web::web;
use petstore_core::{Clock, DomainError, Service, Settings};
use petstore_store::AnyStore;

use crate::auth::KeyCache;
use crate::changes::ChangeFeed;
use crate::delivery::DeliverySettings;
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::readers::{Burst, ReadThreads};

/// The use cases as the HTTP layer runs them: on SQLite or PostgreSQL, with an injectable
/// clock.
pub type PetService = Service<AnyStore, Arc<dyn Clock>>;

/// One reader thread per core this process may use, at most 4: on SQLite a read is CPU work,
/// and more threads than cores only add switches between them. `None` (reads then take the
/// blocking pool) if no thread could be started.
fn start_readers(store: &AnyStore) -> Option<ReadThreads> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let store = store.clone();
    // Reads a reader thread takes at once were all queued before it took them: sharing one
    // snapshot, each still sees every write committed before it was asked for.
    let burst: Burst = Arc::new(move |run: &mut dyn FnMut()| store.sharing_reads(run));
    match ReadThreads::start(cores.min(4), burst) {
        Ok(threads) => Some(threads),
        Err(error) => {
            tracing::warn!(%error, "cannot start reader threads; reads take the blocking pool");
            None
        }
    }
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
    readers: Option<ReadThreads>,
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
        let readers = store
            .reads_in_process()
            .then(|| start_readers(&store))
            .flatten();
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

    /// Runs a use case that only reads: on the reader threads on SQLite (see the `readers`
    /// module), on the blocking pool otherwise.
    pub async fn read<T: Send + 'static>(
        &self,
        work: impl FnOnce(&PetService) -> Result<T, DomainError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let Some(readers) = &self.readers else {
            return self.run(work).await;
        };
        let service = Arc::clone(&self.service);
        answer(readers.run(move || work(&service)).await)
    }

    /// Runs a use case on the blocking thread pool, off the async workers: the store is
    /// synchronous and a transaction may wait on SQLite's lock.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&PetService) -> Result<T, DomainError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let service = Arc::clone(&self.service);
        answer(web::block(move || work(&service)).await)
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

//! What changed anywhere, as one node sees it: a background task per node reads the latest
//! event id and the number of revoked keys a few times a second, whichever node (or
//! `petstore keys revoke`) made the change. Event streams wait on it instead of each polling
//! the database, and the cache of verified keys is emptied when a key was revoked anywhere.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use petstore_core::{Caller, EventId};
use tokio::sync::watch;

use crate::state::AppState;

/// How often the node looks: a change made on another node reaches this node's streams, and
/// a revocation its key cache, within this (plus a read).
pub const WATCH_EVERY: Duration = Duration::from_millis(200);

/// The latest event id this node has seen, for event streams to wait on.
#[derive(Debug)]
pub struct ChangeFeed {
    latest: watch::Sender<Option<EventId>>,
    watched: AtomicBool,
}

impl Default for ChangeFeed {
    fn default() -> Self {
        Self {
            latest: watch::Sender::new(None),
            watched: AtomicBool::new(false),
        }
    }
}

impl ChangeFeed {
    /// A receiver of the latest event id, if the watcher runs (`petstore serve` starts it;
    /// an app built without it, in tests, has streams poll instead).
    pub fn subscribe(&self) -> Option<watch::Receiver<Option<EventId>>> {
        self.watched
            .load(Ordering::Relaxed)
            .then(|| self.latest.subscribe())
    }
}

/// Watches until the service stops.
pub async fn watch(state: AppState) {
    state.changes().watched.store(true, Ordering::Relaxed);
    let mut revocations = None;
    while !state.is_stopping() {
        let seen = state
            .read(|shop| {
                let latest = shop.events().last_id(Caller::Operator)?;
                Ok((latest, shop.keys().revocations()?))
            })
            .await;
        match seen {
            Ok((latest, revoked)) => {
                if revocations.is_some_and(|before| before != revoked) {
                    // A key was revoked somewhere: nothing verified before may be trusted.
                    state.key_cache().clear();
                }
                revocations = Some(revoked);
                state.changes().latest.send_if_modified(|current| {
                    let changed = *current != latest;
                    *current = latest;
                    changed
                });
            }
            Err(error) => tracing::warn!(%error, "cannot read what changed"),
        }
        actix_web::rt::time::sleep(WATCH_EVERY).await;
    }
}

//! The latest event id a node has seen, which the change watcher (`changes.rs`) keeps and
//! event streams wait on.

use std::sync::atomic::{AtomicBool, Ordering};

use petstore_core::EventId;
use tokio::sync::watch;

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

    /// The watcher runs: streams may wait on it.
    pub(crate) fn mark_watched(&self) {
        self.watched.store(true, Ordering::Relaxed);
    }

    /// The latest event id is `latest`: streams waiting on an older one wake.
    pub(crate) fn saw(&self, latest: Option<EventId>) {
        self.latest.send_if_modified(|current| {
            let changed = *current != latest;
            *current = latest;
            changed
        });
    }
}

//! What changed anywhere, as one node sees it: a background task per node reads the latest
//! event id and the number of revoked keys a few times a second, whichever node (or
//! `petstore keys revoke`) made the change. Event streams wait on it instead of each polling
//! the database, and the cache of verified keys is emptied when a key was revoked anywhere.

use std::time::Duration;

use petstore_core::Caller;

use crate::state::AppState;
pub use crate::state::ChangeFeed;

/// How often the node looks: a change made on another node reaches this node's streams, and
/// a revocation its key cache, within this (plus a read).
pub const WATCH_EVERY: Duration = Duration::from_millis(200);

/// Watches until the service stops.
pub async fn watch(state: AppState) {
    state.changes().mark_watched();
    let mut revocations = None;
    while !state.is_stopping() {
        let seen = state
            .read_primary(|shop| {
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
                state.changes().saw(latest);
            }
            Err(error) => tracing::warn!(%error, "cannot read what changed"),
        }
        actix_web::rt::time::sleep(WATCH_EVERY).await;
    }
}

//! One read standby, as a node knows it: its pool, what its last probe found, and whether
//! the primary's commits wait for it.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::synchronous::SyncState;
use super::{PROBE_TRUSTED_FOR, lock};
use crate::freshness::Position;
use crate::postgres::connection::{PgPool, PrimaryOnly};

/// One read standby.
pub(super) struct Standby {
    /// `replica-<n>`, in the order configured: its name in metrics and logs.
    pub(super) name: String,
    pub(super) pool: PgPool,
    /// How its probe connects: on a connection of its own, outside the pool.
    pub(super) probe: Arc<PrimaryOnly>,
    /// Its last probe's answer, and when.
    pub(super) seen: Mutex<Option<(Instant, Option<Position>)>>,
    /// Whether the primary's commits wait for it.
    pub(super) sync: SyncState,
    pub(super) reads: AtomicU64,
}

/// Of `up`, the first the primary's commits wait for, and what it must have replayed
/// besides what it has received ([`synchronous`]).
pub(super) fn first_synchronous<'r>(up: &[&'r Standby]) -> Option<(&'r Standby, Position)> {
    up.iter()
        .find_map(|standby| Some((*standby, standby.sync.floor()?)))
}

impl Standby {
    /// How far it had replayed at its last probe, if that probe is recent and found it a
    /// standby of this primary.
    pub(super) fn replayed(&self) -> Option<Position> {
        match *lock(&self.seen) {
            Some((at, replayed)) if at.elapsed() < PROBE_TRUSTED_FOR => replayed,
            _ => None,
        }
    }

    /// Marks it down until its next probe finds it up.
    pub(super) fn seen_down(&self) {
        *lock(&self.seen) = Some((Instant::now(), None));
    }
}

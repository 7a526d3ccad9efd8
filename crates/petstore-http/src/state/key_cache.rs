//! The cache of verified keys, which authentication (`auth.rs`) reads and fills.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use petstore_core::KeyHolder;
use siphasher::sip128::{Hasher128, SipHasher13};

/// Verified keys, remembered briefly so that a request does not pay a database read to
/// authenticate. Entries are keyed by a keyed 128-bit SipHash of the secret, with keys drawn
/// at random when the process starts (the secret itself is not kept): without those keys
/// nobody can make a secret that lands on a remembered one, and it costs a few hundred
/// instructions where the stored SHA-256 cost a few thousand (docs/performance.md). Entries
/// live [`KeyCache::TTL`] and are all dropped when any key is revoked: at once on the node
/// that revoked it (the API, the console), and on every other node, or after
/// `petstore keys revoke`, when the node's watcher sees the count of revoked keys change
/// (`changes.rs`, a few times a second).
#[derive(Debug)]
pub struct KeyCache {
    hash_keys: (u64, u64),
    entries: Mutex<HashMap<u128, (Arc<KeyHolder>, Instant)>>,
}

impl Default for KeyCache {
    fn default() -> Self {
        // RandomState is seeded from the operating system's generator: its hashes of fixed
        // inputs are keys nobody outside the process can know.
        let seed = std::hash::RandomState::new();
        Self {
            hash_keys: (seed.hash_one(0_u8), seed.hash_one(1_u8)),
            entries: Mutex::default(),
        }
    }
}

impl KeyCache {
    /// How long a verified key is trusted without asking the database again.
    pub const TTL: Duration = Duration::from_secs(5);
    /// Entries kept at most; past it the cache starts afresh.
    const CAPACITY: usize = 10_000;

    /// Where the key of `token` (a secret as sent) is remembered.
    pub(crate) fn slot(&self, token: &[u8]) -> u128 {
        let mut hasher = SipHasher13::new_with_keys(self.hash_keys.0, self.hash_keys.1);
        hasher.write(token);
        hasher.finish128().as_u128()
    }

    /// The key's holder remembered at `slot`, if not older than the TTL.
    pub(crate) fn get(&self, slot: u128) -> Option<Arc<KeyHolder>> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries
            .get(&slot)
            .filter(|(_, at)| at.elapsed() < Self::TTL)
            .map(|(holder, _)| Arc::clone(holder))
    }

    /// Remembers `holder` at `slot`.
    pub(crate) fn put(&self, slot: u128, holder: Arc<KeyHolder>) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= Self::CAPACITY {
            entries.clear();
        }
        entries.insert(slot, (holder, Instant::now()));
    }

    /// Forgets every verified key (a key was revoked).
    pub fn clear(&self) {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

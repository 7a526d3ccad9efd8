//! A [`Store`] in memory, for tests (ours and embedders') and small embedded catalogues.
//!
//! Writes are serialised by one mutex and work on a copy of the catalogue that replaces the
//! original only when the work succeeds, so a failed or panicking write leaves nothing behind.
//! That copy makes a write cost O(catalogue size): fine for tests and a few thousand pets,
//! not meant for a large catalogue. Events and stock movements are kept apart and only
//! appended to, so they are never copied.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, Utc};

use crate::access::StoredKey;
use crate::error::DomainError;
use crate::events::Event;
use crate::hold::Hold;
use crate::idempotency::IdempotencyRecord;
use crate::ids::{CategoryId, DeliveryId, HoldId, KeyId, OrderId, OwnerId, PetId, WebhookId};
use crate::ledger::Movement;
use crate::model::{Category, InventoryItem, Order, Pet};
use crate::repository::{RepoResult, Snapshot, Store, Transaction};
use crate::session::StaffSession;
use crate::validation::ValidationError;
use crate::values::{PageSize, Stock};
use crate::webhooks::{DeliveryAttempt, Webhook, WebhookSecret};

mod catalogue;
mod events;
mod holds;
mod idempotency;
mod inventory;
mod keys;
mod ledger;
mod orders;
mod sessions;
mod webhooks;

/// A [`Store`] in memory: writes serialised by one mutex, each on a copy of the data that
/// replaces the original only when the write succeeds.
#[derive(Debug, Default)]
pub struct InMemoryStore {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    catalogue: Catalogue,
    logs: Logs,
}

/// What is only ever appended to: the events and the stock movements.
#[derive(Debug, Default)]
struct Logs {
    events: Vec<Event>,
    movements: Vec<Movement>,
}

#[derive(Debug, Clone, Default)]
struct Catalogue {
    categories: BTreeMap<CategoryId, Category>,
    pets: BTreeMap<PetId, Pet>,
    stock: BTreeMap<PetId, Stock>,
    orders: BTreeMap<OrderId, Order>,
    /// Holds, active and ended.
    holds: BTreeMap<HoldId, Hold>,
    keys: BTreeMap<KeyId, StoredKey>,
    /// Staff sessions, by their token's hash.
    sessions: BTreeMap<[u8; 32], StaffSession>,
    idempotency: BTreeMap<(OwnerId, String), IdempotencyRecord>,
    webhooks: BTreeMap<WebhookId, (Webhook, WebhookSecret)>,
    deliveries: BTreeMap<DeliveryId, (WebhookId, DeliveryAttempt)>,
    /// Delivery leases: who holds each subscription, until when.
    leases: BTreeMap<WebhookId, (String, DateTime<Utc>)>,
    // Like SQLite's AUTOINCREMENT: ids are never reused, even after a delete.
    last_category_id: i64,
    last_pet_id: i64,
    last_order_id: i64,
    last_hold_id: i64,
    last_key_id: i64,
    last_webhook_id: i64,
    last_delivery_id: i64,
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic inside a write never reaches the shared state (it works on a copy), so
        // the state behind a poisoned lock is still consistent.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Store for InMemoryStore {
    fn read<T>(&self, work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>) -> RepoResult<T> {
        let inner = self.lock();
        let mut view = View {
            catalogue: &inner.catalogue,
            committed: &inner.logs,
            pending: Logs::default(),
        };
        work(&mut view)
    }

    fn write<T>(
        &self,
        mut work: impl FnMut(&mut dyn Transaction) -> RepoResult<T>,
    ) -> RepoResult<T> {
        let mut inner = self.lock();
        let mut draft = View {
            catalogue: inner.catalogue.clone(),
            committed: &inner.logs,
            pending: Logs::default(),
        };
        let value = work(&mut draft)?;
        let View {
            catalogue, pending, ..
        } = draft;
        inner.catalogue = catalogue;
        inner.logs.events.extend(pending.events);
        inner.logs.movements.extend(pending.movements);
        Ok(value)
    }
}

/// The catalogue as one transaction sees it: borrowed for a read, an owned draft for a write.
struct View<'a, C> {
    catalogue: C,
    committed: &'a Logs,
    pending: Logs,
}

fn next_id<T>(last: &mut i64, make: fn(i64) -> Result<T, ValidationError>) -> RepoResult<T> {
    *last += 1;
    make(*last).map_err(|_| DomainError::storage("ids exhausted"))
}

/// [`page`] in either direction: newest first (ids descending, `after` a larger id) when
/// `newest_first`.
fn page_either<K: Ord + Copy, V: Clone>(
    map: &BTreeMap<K, V>,
    (after, newest_first): (Option<K>, bool),
    limit: PageSize,
    keep: impl Fn(&V) -> bool,
) -> Vec<V> {
    if !newest_first {
        return page(map, after, limit, keep);
    }
    let before = after.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded);
    map.range((std::ops::Bound::Unbounded, before))
        .rev()
        .map(|(_, v)| v)
        .filter(|v| keep(v))
        .take(limit.get() as usize + 1)
        .cloned()
        .collect()
}

/// How many values `keep` keeps after `after`, in the direction [`page_either`] takes.
fn count_after<K: Ord + Copy, V>(
    map: &BTreeMap<K, V>,
    (after, newest_first): (Option<K>, bool),
    keep: impl Fn(&V) -> bool,
) -> u64 {
    let beyond = |key: &K| match after {
        None => true,
        Some(after) if newest_first => *key < after,
        Some(after) => *key > after,
    };
    map.iter().filter(|(k, v)| beyond(k) && keep(v)).count() as u64
}

fn page<K: Ord + Copy, V: Clone>(
    map: &BTreeMap<K, V>,
    after: Option<K>,
    limit: PageSize,
    keep: impl Fn(&V) -> bool,
) -> Vec<V> {
    let from = match after {
        Some(after) => std::ops::Bound::Excluded(after),
        None => std::ops::Bound::Unbounded,
    };
    map.range((from, std::ops::Bound::Unbounded))
        .map(|(_, v)| v)
        .filter(|v| keep(v))
        .take(limit.get() as usize + 1)
        .cloned()
        .collect()
}

fn inventory_item(catalogue: &Catalogue, pet: &Pet) -> InventoryItem {
    InventoryItem {
        pet_id: pet.id,
        quantity: catalogue.stock.get(&pet.id).copied().unwrap_or_default(),
        status: pet.status,
        held: catalogue.held(pet.id),
        committed: catalogue.committed(pet.id),
    }
}

impl View<'_, Catalogue> {
    fn missing(what: &str, id: impl std::fmt::Display) -> DomainError {
        DomainError::storage(format!("{what} {id} is not stored"))
    }
}

#[cfg(test)]
mod conformance {
    crate::conformance_suite!(crate::InMemoryStore::new, property_cases = 256);
}

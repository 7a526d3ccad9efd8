//! A [`Store`] in memory, for tests (ours and embedders') and small embedded catalogues.
//!
//! Writes are serialised by one mutex and work on a copy of the catalogue that replaces the
//! original only when the work succeeds, so a failed or panicking write leaves nothing behind.
//! That copy makes a write cost O(catalogue size): fine for tests and a few thousand pets,
//! not meant for a large catalogue. Events are kept apart and only appended to, so they are
//! never copied.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, Utc};

use crate::access::{ApiKey, NewApiKey, Role, StoredKey};
use crate::error::DomainError;
use crate::events::{DomainEvent, Event};
use crate::idempotency::IdempotencyRecord;
use crate::ids::{CategoryId, DeliveryId, EventId, KeyId, OrderId, OwnerId, PetId, WebhookId};
use crate::model::{Category, InventoryItem, NewCategory, NewOrder, NewPet, Order, Pet};
use crate::query::{CategoryQuery, InventoryQuery, KeyQuery, OrderQuery, PetQuery, fold_case};
use crate::repository::{RepoResult, Snapshot, Store, Transaction};
use crate::values::{Name, Stock};
use crate::webhooks::{
    DeliveryAttempt, DeliveryQuery, DeliveryState, NewDeliveryAttempt, NewWebhook, Webhook,
    WebhookQuery, WebhookSecret,
};

/// A [`Store`] in memory. See the [module docs](self).
#[derive(Debug, Default)]
pub struct InMemoryStore {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    catalogue: Catalogue,
    events: Vec<Event>,
}

#[derive(Debug, Clone, Default)]
struct Catalogue {
    categories: BTreeMap<CategoryId, Category>,
    pets: BTreeMap<PetId, Pet>,
    stock: BTreeMap<PetId, Stock>,
    orders: BTreeMap<OrderId, Order>,
    keys: BTreeMap<KeyId, StoredKey>,
    idempotency: BTreeMap<(OwnerId, String), IdempotencyRecord>,
    webhooks: BTreeMap<WebhookId, (Webhook, WebhookSecret)>,
    deliveries: BTreeMap<DeliveryId, (WebhookId, DeliveryAttempt)>,
    // Like SQLite's AUTOINCREMENT: ids are never reused, even after a delete.
    last_category_id: i64,
    last_pet_id: i64,
    last_order_id: i64,
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
            committed: &inner.events,
            pending: Vec::new(),
        };
        work(&mut view)
    }

    fn write<T>(&self, work: impl FnOnce(&mut dyn Transaction) -> RepoResult<T>) -> RepoResult<T> {
        let mut inner = self.lock();
        let mut draft = View {
            catalogue: inner.catalogue.clone(),
            committed: &inner.events,
            pending: Vec::new(),
        };
        let value = work(&mut draft)?;
        let View {
            catalogue, pending, ..
        } = draft;
        inner.catalogue = catalogue;
        inner.events.extend(pending);
        Ok(value)
    }
}

/// The catalogue as one transaction sees it: borrowed for a read, an owned draft for a write.
struct View<'a, C> {
    catalogue: C,
    committed: &'a [Event],
    pending: Vec<Event>,
}

fn next_id<T>(last: &mut i64, make: fn(i64) -> Result<T, crate::ValidationError>) -> RepoResult<T> {
    *last += 1;
    make(*last).map_err(|_| DomainError::Storage("ids exhausted".into()))
}

fn page<K: Ord + Copy, V: Clone>(
    map: &BTreeMap<K, V>,
    after: Option<K>,
    limit: crate::values::PageSize,
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

impl<C: Borrow<Catalogue>> Snapshot for View<'_, C> {
    fn category(&mut self, id: CategoryId) -> RepoResult<Option<Category>> {
        Ok(self.catalogue.borrow().categories.get(&id).cloned())
    }

    fn category_named(&mut self, name: &Name) -> RepoResult<Option<Category>> {
        let wanted = fold_case(name.as_str());
        Ok(self
            .catalogue
            .borrow()
            .categories
            .values()
            .find(|c| fold_case(c.name.as_str()) == wanted)
            .cloned())
    }

    fn categories(&mut self, query: &CategoryQuery) -> RepoResult<Vec<Category>> {
        let catalogue = self.catalogue.borrow();
        Ok(page(
            &catalogue.categories,
            query.after,
            query.limit,
            |_| true,
        ))
    }

    fn category_has_pets(&mut self, id: CategoryId) -> RepoResult<bool> {
        Ok(self
            .catalogue
            .borrow()
            .pets
            .values()
            .any(|p| p.category_id == id))
    }

    fn pet(&mut self, id: PetId) -> RepoResult<Option<Pet>> {
        Ok(self.catalogue.borrow().pets.get(&id).cloned())
    }

    fn pets(&mut self, query: &PetQuery) -> RepoResult<Vec<Pet>> {
        let needle = query.name_contains.as_deref().map(fold_case);
        let catalogue = self.catalogue.borrow();
        Ok(page(&catalogue.pets, query.after, query.limit, |pet| {
            query.status.is_none_or(|s| pet.status == s)
                && query.category_id.is_none_or(|c| pet.category_id == c)
                && (query.ids.is_empty() || query.ids.contains(&pet.id))
                && needle
                    .as_deref()
                    .is_none_or(|n| fold_case(pet.name.as_str()).contains(n))
        }))
    }

    fn inventory_item(&mut self, pet_id: PetId) -> RepoResult<Option<InventoryItem>> {
        let catalogue = self.catalogue.borrow();
        Ok(catalogue
            .pets
            .get(&pet_id)
            .map(|pet| inventory_item(catalogue, pet)))
    }

    fn inventory(&mut self, query: &InventoryQuery) -> RepoResult<Vec<InventoryItem>> {
        let catalogue = self.catalogue.borrow();
        let pets = page(&catalogue.pets, query.after, query.limit, |pet| {
            query.status.is_none_or(|s| pet.status == s)
        });
        Ok(pets
            .iter()
            .map(|pet| inventory_item(catalogue, pet))
            .collect())
    }

    fn order(&mut self, id: OrderId) -> RepoResult<Option<Order>> {
        Ok(self.catalogue.borrow().orders.get(&id).cloned())
    }

    fn orders(&mut self, query: &OrderQuery) -> RepoResult<Vec<Order>> {
        let catalogue = self.catalogue.borrow();
        Ok(page(&catalogue.orders, query.after, query.limit, |order| {
            query.pet_id.is_none_or(|p| order.pet_id == p)
                && query.complete.is_none_or(|c| order.complete == c)
                && query.owner.is_none_or(|o| order.owner == Some(o))
        }))
    }

    fn open_order_count(&mut self, pet_id: PetId) -> RepoResult<u64> {
        let open = self
            .catalogue
            .borrow()
            .orders
            .values()
            .filter(|o| o.pet_id == pet_id && !o.complete)
            .count();
        Ok(open as u64)
    }

    fn events_after(&mut self, after: Option<EventId>, limit: u32) -> RepoResult<Vec<Event>> {
        Ok(self
            .committed
            .iter()
            .chain(&self.pending)
            .filter(|e| after.is_none_or(|a| e.id > a))
            .take(limit as usize)
            .cloned()
            .collect())
    }

    fn last_event_id(&mut self) -> RepoResult<Option<EventId>> {
        Ok(self
            .pending
            .last()
            .or(self.committed.last())
            .map(|event| event.id))
    }

    fn key(&mut self, id: KeyId) -> RepoResult<Option<ApiKey>> {
        Ok(self.catalogue.borrow().keys.get(&id).map(|k| k.key.clone()))
    }

    fn keys(&mut self, query: &KeyQuery) -> RepoResult<Vec<ApiKey>> {
        let catalogue = self.catalogue.borrow();
        let stored = page(&catalogue.keys, query.after, query.limit, |_| true);
        Ok(stored.into_iter().map(|k| k.key).collect())
    }

    fn keys_with_prefix(&mut self, prefix: &str) -> RepoResult<Vec<StoredKey>> {
        Ok(self
            .catalogue
            .borrow()
            .keys
            .values()
            .filter(|k| k.key.prefix == prefix)
            .cloned()
            .collect())
    }

    fn idempotency_record(
        &mut self,
        owner: OwnerId,
        key: &str,
    ) -> RepoResult<Option<IdempotencyRecord>> {
        Ok(self
            .catalogue
            .borrow()
            .idempotency
            .get(&(owner, key.to_owned()))
            .cloned())
    }

    fn has_active_key(&mut self, role: Option<Role>) -> RepoResult<bool> {
        Ok(self
            .catalogue
            .borrow()
            .keys
            .values()
            .any(|k| k.key.revoked_at.is_none() && role.is_none_or(|r| k.key.role == r)))
    }

    fn webhook(&mut self, id: WebhookId) -> RepoResult<Option<Webhook>> {
        Ok(self
            .catalogue
            .borrow()
            .webhooks
            .get(&id)
            .map(|w| w.0.clone()))
    }

    fn webhooks(&mut self, query: &WebhookQuery) -> RepoResult<Vec<Webhook>> {
        let catalogue = self.catalogue.borrow();
        let stored = page(&catalogue.webhooks, query.after, query.limit, |_| true);
        Ok(stored.into_iter().map(|w| w.0).collect())
    }

    fn webhook_secret(&mut self, id: WebhookId) -> RepoResult<Option<WebhookSecret>> {
        Ok(self
            .catalogue
            .borrow()
            .webhooks
            .get(&id)
            .map(|w| w.1.clone()))
    }

    fn webhooks_due(&mut self, now: DateTime<Utc>) -> RepoResult<Vec<Webhook>> {
        Ok(self
            .catalogue
            .borrow()
            .webhooks
            .values()
            .filter(|w| w.0.delivery.is_due(now))
            .map(|w| w.0.clone())
            .collect())
    }

    fn delivery_attempts(
        &mut self,
        webhook: WebhookId,
        query: &DeliveryQuery,
    ) -> RepoResult<Vec<DeliveryAttempt>> {
        let catalogue = self.catalogue.borrow();
        let stored = page(&catalogue.deliveries, query.after, query.limit, |d| {
            d.0 == webhook
        });
        Ok(stored.into_iter().map(|d| d.1).collect())
    }
}

fn inventory_item(catalogue: &Catalogue, pet: &Pet) -> InventoryItem {
    InventoryItem {
        pet_id: pet.id,
        quantity: catalogue.stock.get(&pet.id).copied().unwrap_or_default(),
        status: pet.status,
    }
}

impl View<'_, Catalogue> {
    fn missing(what: &str, id: impl std::fmt::Display) -> DomainError {
        DomainError::Storage(format!("{what} {id} is not stored"))
    }
}

impl Transaction for View<'_, Catalogue> {
    fn insert_category(&mut self, new: &NewCategory) -> RepoResult<Category> {
        let id = next_id(&mut self.catalogue.last_category_id, CategoryId::new)?;
        let category = Category {
            id,
            name: new.name.clone(),
            description: new.description.clone(),
        };
        self.catalogue.categories.insert(id, category.clone());
        Ok(category)
    }

    fn update_category(&mut self, category: &Category) -> RepoResult<()> {
        let slot = self
            .catalogue
            .categories
            .get_mut(&category.id)
            .ok_or_else(|| Self::missing("category", category.id))?;
        *slot = category.clone();
        Ok(())
    }

    fn delete_category(&mut self, id: CategoryId) -> RepoResult<()> {
        self.catalogue.categories.remove(&id);
        Ok(())
    }

    fn insert_pet(&mut self, new: &NewPet) -> RepoResult<Pet> {
        let id = next_id(&mut self.catalogue.last_pet_id, PetId::new)?;
        let pet = Pet {
            id,
            name: new.name.clone(),
            category_id: new.category_id,
            status: new.status,
        };
        self.catalogue.pets.insert(id, pet.clone());
        self.catalogue.stock.insert(id, Stock::ZERO);
        Ok(pet)
    }

    fn update_pet(&mut self, pet: &Pet) -> RepoResult<()> {
        let slot = self
            .catalogue
            .pets
            .get_mut(&pet.id)
            .ok_or_else(|| Self::missing("pet", pet.id))?;
        *slot = pet.clone();
        Ok(())
    }

    fn delete_pet(&mut self, id: PetId) -> RepoResult<()> {
        self.catalogue.pets.remove(&id);
        self.catalogue.stock.remove(&id);
        Ok(())
    }

    fn set_stock(&mut self, pet_id: PetId, stock: Stock) -> RepoResult<()> {
        let slot = self
            .catalogue
            .stock
            .get_mut(&pet_id)
            .ok_or_else(|| Self::missing("inventory entry", pet_id))?;
        *slot = stock;
        Ok(())
    }

    fn insert_order(&mut self, new: &NewOrder, owner: Option<OwnerId>) -> RepoResult<Order> {
        let id = next_id(&mut self.catalogue.last_order_id, OrderId::new)?;
        let order = Order {
            id,
            pet_id: new.pet_id,
            quantity: new.quantity,
            ship_date: new.ship_date,
            complete: false,
            owner,
        };
        self.catalogue.orders.insert(id, order.clone());
        Ok(order)
    }

    fn update_order(&mut self, order: &Order) -> RepoResult<()> {
        let slot = self
            .catalogue
            .orders
            .get_mut(&order.id)
            .ok_or_else(|| Self::missing("order", order.id))?;
        *slot = order.clone();
        Ok(())
    }

    fn delete_order(&mut self, id: OrderId) -> RepoResult<()> {
        self.catalogue.orders.remove(&id);
        Ok(())
    }

    fn insert_key(
        &mut self,
        new: &NewApiKey,
        prefix: &str,
        hash: &[u8; 32],
        created_at: DateTime<Utc>,
    ) -> RepoResult<ApiKey> {
        let id = next_id(&mut self.catalogue.last_key_id, KeyId::new)?;
        let key = ApiKey {
            id,
            name: new.name.clone(),
            role: new.role,
            prefix: prefix.to_owned(),
            created_at,
            revoked_at: None,
        };
        let stored = StoredKey {
            key: key.clone(),
            hash: *hash,
        };
        self.catalogue.keys.insert(id, stored);
        Ok(key)
    }

    fn revoke_key(&mut self, id: KeyId, at: DateTime<Utc>) -> RepoResult<()> {
        let slot = self
            .catalogue
            .keys
            .get_mut(&id)
            .ok_or_else(|| Self::missing("key", id))?;
        slot.key.revoked_at = Some(at);
        Ok(())
    }

    fn insert_idempotency_record(
        &mut self,
        owner: OwnerId,
        key: &str,
        record: &IdempotencyRecord,
    ) -> RepoResult<()> {
        self.catalogue
            .idempotency
            .insert((owner, key.to_owned()), record.clone());
        Ok(())
    }

    fn purge_idempotency_records(&mut self, before: DateTime<Utc>) -> RepoResult<()> {
        self.catalogue
            .idempotency
            .retain(|_, record| record.recorded_at >= before);
        Ok(())
    }

    fn insert_webhook(
        &mut self,
        new: &NewWebhook,
        secret: &WebhookSecret,
        created_at: DateTime<Utc>,
        state: &DeliveryState,
    ) -> RepoResult<Webhook> {
        let id = next_id(&mut self.catalogue.last_webhook_id, WebhookId::new)?;
        let webhook = Webhook {
            id,
            url: new.url.clone(),
            events: new.events.clone(),
            created_at,
            delivery: *state,
        };
        self.catalogue
            .webhooks
            .insert(id, (webhook.clone(), secret.clone()));
        Ok(webhook)
    }

    fn delete_webhook(&mut self, id: WebhookId) -> RepoResult<()> {
        self.catalogue.webhooks.remove(&id);
        self.catalogue.deliveries.retain(|_, d| d.0 != id);
        Ok(())
    }

    fn set_delivery_state(&mut self, id: WebhookId, state: &DeliveryState) -> RepoResult<()> {
        let slot = self
            .catalogue
            .webhooks
            .get_mut(&id)
            .ok_or_else(|| Self::missing("webhook", id))?;
        slot.0.delivery = *state;
        Ok(())
    }

    fn insert_delivery_attempt(&mut self, new: &NewDeliveryAttempt) -> RepoResult<DeliveryAttempt> {
        if !self.catalogue.webhooks.contains_key(&new.webhook_id) {
            return Err(Self::missing("webhook", new.webhook_id));
        }
        let id = next_id(&mut self.catalogue.last_delivery_id, DeliveryId::new)?;
        let attempt = new.recorded(id);
        self.catalogue
            .deliveries
            .insert(id, (new.webhook_id, attempt.clone()));
        Ok(attempt)
    }

    fn prune_delivery_attempts(&mut self, webhook: WebhookId, keep: u32) -> RepoResult<()> {
        let deliveries = &mut self.catalogue.deliveries;
        let doomed: Vec<DeliveryId> = deliveries
            .iter()
            .rev()
            .filter(|(_, d)| d.0 == webhook)
            .skip(keep as usize)
            .map(|(id, _)| *id)
            .collect();
        for id in doomed {
            deliveries.remove(&id);
        }
        Ok(())
    }

    fn append_events(&mut self, time: DateTime<Utc>, events: &[DomainEvent]) -> RepoResult<()> {
        let mut last = self
            .pending
            .last()
            .or(self.committed.last())
            .map_or(0, |e| e.id.get());
        for event in events {
            let id = next_id(&mut last, EventId::new)?;
            self.pending.push(Event {
                id,
                time,
                event_type: event.event_type(),
                subject: event.subject(),
                data: event.data(),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod conformance {
    crate::conformance_suite!(crate::InMemoryStore::new, property_cases = 256);
}

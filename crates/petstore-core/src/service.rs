//! The use cases: every operation of the API, each one transaction.
//!
//! A use case loads the facts it needs, asks [`rules`](crate::rules) what follows, and writes
//! the new state together with its events. It never talks to HTTP or SQL.

use crate::access::{ApiKey, Caller, KeySecret, NewApiKey, Role};
use crate::clock::{Clock, SystemClock};
use crate::error::{DomainError, Resource};
use crate::events::{DomainEvent, Event};
use crate::ids::{CategoryId, EventId, KeyId, OrderId, OwnerId, PetId};
use crate::model::{
    Category, InventoryItem, NewCategory, NewOrder, NewPet, Order, OrderPatch, Pet,
};
use crate::query::{
    CategoryQuery, InventoryQuery, KeyQuery, OrderQuery, OrderScope, Page, PetQuery,
};
use crate::repository::{Snapshot, Store, Transaction};
use crate::rules::{PetStock, Transition};
use crate::values::{PageSize, Stock};

/// The pet store's use cases over a [`Store`].
///
/// Cheap to share: wrap it in an `Arc`, or give it an `Arc`'d store.
#[derive(Debug, Clone)]
pub struct Service<S, C = SystemClock> {
    store: S,
    clock: C,
}

impl<S: Store> Service<S> {
    /// The use cases over `store`, with the system clock.
    pub fn new(store: S) -> Self {
        Self::with_clock(store, SystemClock)
    }
}

impl<S: Store, C: Clock> Service<S, C> {
    /// The use cases over `store`, reading time from `clock` (event times).
    pub fn with_clock(store: S, clock: C) -> Self {
        Self { store, clock }
    }

    /// The store underneath.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Runs a write and records the events it returns in the same transaction.
    fn change<T>(
        &self,
        work: impl FnOnce(&mut dyn Transaction) -> Result<(T, Vec<DomainEvent>), DomainError>,
    ) -> Result<T, DomainError> {
        let time = self.clock.now();
        self.store.write(|tx| {
            let (value, events) = work(tx)?;
            tx.append_events(time, &events)?;
            Ok(value)
        })
    }

    // ---- categories ------------------------------------------------------------------

    /// Creates a category. Its name must not be taken, whatever the case.
    pub fn create_category(&self, new: NewCategory) -> Result<Category, DomainError> {
        self.change(|tx| {
            if tx.category_named(&new.name)?.is_some() {
                return Err(DomainError::CategoryExists {
                    name: new.name.as_str().to_owned(),
                });
            }
            let category = tx.insert_category(&new)?;
            Ok((
                category.clone(),
                vec![DomainEvent::CategoryCreated(category)],
            ))
        })
    }

    /// The category with this id.
    pub fn get_category(&self, id: CategoryId) -> Result<Category, DomainError> {
        self.store.read(|snapshot| existing_category(snapshot, id))
    }

    /// A page of categories.
    pub fn list_categories(&self, query: &CategoryQuery) -> Result<Page<Category>, DomainError> {
        let items = self.store.read(|snapshot| snapshot.categories(query))?;
        Ok(Page::from_probe(items, query.limit, |c| c.id.get()))
    }

    /// Replaces a category. Its new name must not be another category's.
    pub fn replace_category(
        &self,
        id: CategoryId,
        new: NewCategory,
    ) -> Result<Category, DomainError> {
        self.change(|tx| {
            let current = existing_category(tx, id)?;
            if let Some(other) = tx.category_named(&new.name)?
                && other.id != id
            {
                return Err(DomainError::CategoryExists {
                    name: new.name.as_str().to_owned(),
                });
            }
            let replaced = Category {
                id,
                name: new.name,
                description: new.description,
            };
            if replaced == current {
                return Ok((replaced, Vec::new()));
            }
            tx.update_category(&replaced)?;
            Ok((
                replaced.clone(),
                vec![DomainEvent::CategoryUpdated(replaced)],
            ))
        })
    }

    /// Deletes a category no pet belongs to.
    pub fn delete_category(&self, id: CategoryId) -> Result<(), DomainError> {
        self.change(|tx| {
            existing_category(tx, id)?;
            if tx.category_has_pets(id)? {
                return Err(DomainError::CategoryInUse { id });
            }
            tx.delete_category(id)?;
            Ok(((), vec![DomainEvent::CategoryDeleted(id)]))
        })
    }

    // ---- pets ------------------------------------------------------------------------

    /// Creates a pet in an existing category, with an inventory entry at 0.
    pub fn create_pet(&self, new: NewPet) -> Result<Pet, DomainError> {
        self.change(|tx| {
            known_category(tx, new.category_id)?;
            let pet = tx.insert_pet(&new)?;
            Ok((pet.clone(), vec![DomainEvent::PetCreated(pet)]))
        })
    }

    /// The pet with this id.
    pub fn get_pet(&self, id: PetId) -> Result<Pet, DomainError> {
        self.store.read(|snapshot| existing_pet(snapshot, id))
    }

    /// A page of pets matching the query.
    pub fn list_pets(&self, query: &PetQuery) -> Result<Page<Pet>, DomainError> {
        let items = self.store.read(|snapshot| snapshot.pets(query))?;
        Ok(Page::from_probe(items, query.limit, |p| p.id.get()))
    }

    /// Replaces a pet's name, category and status. A status set here is a staff decision:
    /// it is recorded as a status change and no rule overrides it.
    pub fn replace_pet(&self, id: PetId, new: NewPet) -> Result<Pet, DomainError> {
        self.change(|tx| {
            let current = existing_pet(tx, id)?;
            known_category(tx, new.category_id)?;
            let replaced = Pet {
                id,
                name: new.name,
                category_id: new.category_id,
                status: new.status,
            };
            if replaced == current {
                return Ok((replaced, Vec::new()));
            }
            tx.update_pet(&replaced)?;
            let mut events = vec![DomainEvent::PetUpdated(replaced.clone())];
            if replaced.status != current.status {
                let facts = pet_stock(tx, &current)?;
                events.extend(facts.set_status(replaced.status).events);
            }
            Ok((replaced, events))
        })
    }

    /// Deletes a pet and its inventory entry. Refused while the pet has open orders.
    pub fn delete_pet(&self, id: PetId) -> Result<(), DomainError> {
        self.change(|tx| {
            existing_pet(tx, id)?;
            if tx.open_order_count(id)? > 0 {
                return Err(DomainError::PetHasOpenOrders { id });
            }
            tx.delete_pet(id)?;
            Ok(((), vec![DomainEvent::PetDeleted(id)]))
        })
    }

    // ---- inventory -------------------------------------------------------------------

    /// The inventory entry of a pet.
    pub fn get_inventory_item(&self, pet_id: PetId) -> Result<InventoryItem, DomainError> {
        self.store.read(|snapshot| {
            snapshot
                .inventory_item(pet_id)?
                .ok_or_else(|| DomainError::not_found(Resource::InventoryItem, pet_id))
        })
    }

    /// A page of inventory entries.
    pub fn list_inventory(
        &self,
        query: &InventoryQuery,
    ) -> Result<Page<InventoryItem>, DomainError> {
        let items = self.store.read(|snapshot| snapshot.inventory(query))?;
        Ok(Page::from_probe(items, query.limit, |i| i.pet_id.get()))
    }

    /// Sets a pet's stock level; the pet's status follows the stock rules.
    pub fn set_stock(&self, pet_id: PetId, stock: Stock) -> Result<InventoryItem, DomainError> {
        self.change(|tx| {
            let pet = tx
                .pet(pet_id)?
                .ok_or_else(|| DomainError::not_found(Resource::InventoryItem, pet_id))?;
            let transition = pet_stock(tx, &pet)?.set_stock(stock);
            apply(tx, &pet, &transition)?;
            Ok((transition.after.inventory_item(), transition.events))
        })
    }

    // ---- orders ----------------------------------------------------------------------

    /// Places an order: the units leave stock at once. `owner` is who may see and cancel it
    /// besides staff.
    pub fn place_order(&self, new: NewOrder, owner: Option<OwnerId>) -> Result<Order, DomainError> {
        self.change(|tx| {
            let pet = tx
                .pet(new.pet_id)?
                .ok_or(DomainError::UnknownPet { id: new.pet_id })?;
            let transition = pet_stock(tx, &pet)?.place_order(new.quantity)?;
            let order = tx.insert_order(&new, owner)?;
            apply(tx, &pet, &transition)?;
            let mut events = vec![DomainEvent::OrderPlaced(order.clone())];
            events.extend(transition.events);
            Ok((order, events))
        })
    }

    /// The order with this id, if the scope allows seeing it.
    pub fn get_order(&self, id: OrderId, scope: OrderScope) -> Result<Order, DomainError> {
        self.store
            .read(|snapshot| visible_order(snapshot, id, scope))
    }

    /// A page of the orders the scope allows seeing.
    pub fn list_orders(
        &self,
        query: &OrderQuery,
        scope: OrderScope,
    ) -> Result<Page<Order>, DomainError> {
        let query = OrderQuery {
            owner: match scope {
                OrderScope::All => None,
                OrderScope::OwnedBy(owner) => Some(owner),
            },
            ..*query
        };
        let items = self.store.read(|snapshot| snapshot.orders(&query))?;
        Ok(Page::from_probe(items, query.limit, |o| o.id.get()))
    }

    /// Changes an order's ship date or completes it. Completion is final: asking to make a
    /// complete order open again is an invalid transition.
    pub fn update_order(&self, id: OrderId, patch: OrderPatch) -> Result<Order, DomainError> {
        self.change(|tx| {
            let current = visible_order(tx, id, OrderScope::All)?;
            let completes = match (current.complete, patch.complete) {
                (true, Some(false)) => {
                    return Err(DomainError::InvalidTransition(
                        "a complete order cannot be made open again".into(),
                    ));
                }
                (false, Some(true)) => true,
                _ => false,
            };
            let updated = Order {
                ship_date: patch.ship_date.unwrap_or(current.ship_date),
                complete: current.complete || completes,
                ..current.clone()
            };
            if updated == current {
                return Ok((updated, Vec::new()));
            }
            // The facts are read before the order is saved as complete: the rule expects it
            // still counted among the open orders.
            let completion = if completes {
                let pet = order_pet(tx, &current)?;
                let transition = pet_stock(tx, &pet)?.complete_order();
                Some((pet, transition))
            } else {
                None
            };
            tx.update_order(&updated)?;
            let mut events = Vec::new();
            if updated.ship_date != current.ship_date {
                events.push(DomainEvent::OrderUpdated(updated.clone()));
            }
            if let Some((pet, transition)) = completion {
                apply(tx, &pet, &transition)?;
                events.push(DomainEvent::OrderCompleted(updated.clone()));
                events.extend(transition.events);
            }
            Ok((updated, events))
        })
    }

    /// Cancels an open order: it is removed and its units go back in stock.
    pub fn cancel_order(&self, id: OrderId, scope: OrderScope) -> Result<(), DomainError> {
        self.change(|tx| {
            let order = visible_order(tx, id, scope)?;
            if order.complete {
                return Err(DomainError::OrderNotCancellable { id });
            }
            let pet = order_pet(tx, &order)?;
            let transition = pet_stock(tx, &pet)?.cancel_order(order.quantity);
            tx.delete_order(id)?;
            apply(tx, &pet, &transition)?;
            let mut events = vec![DomainEvent::OrderCancelled(order)];
            events.extend(transition.events);
            Ok(((), events))
        })
    }

    // ---- keys ------------------------------------------------------------------------

    /// Stores a new key for `secret` (generated by the caller from the OS's randomness).
    pub fn create_key(&self, new: NewApiKey, secret: &KeySecret) -> Result<ApiKey, DomainError> {
        let now = self.clock.now();
        self.store
            .write(|tx| tx.insert_key(&new, secret.prefix(), &secret.hash(), now))
    }

    /// The caller a presented secret stands for, or `None` if it is unknown or revoked.
    pub fn authenticate(&self, secret: &KeySecret) -> Result<Option<Caller>, DomainError> {
        let candidates = self
            .store
            .read(|snapshot| snapshot.keys_with_prefix(secret.prefix()))?;
        // Every candidate is compared, in constant time, whatever the first one gives.
        let mut found = None;
        for candidate in candidates {
            if secret.matches(&candidate.hash) && candidate.key.revoked_at.is_none() {
                found = Some(Caller {
                    key: candidate.key.id,
                    role: candidate.key.role,
                });
            }
        }
        Ok(found)
    }

    /// The key with this id, revoked or not.
    pub fn get_key(&self, id: KeyId) -> Result<ApiKey, DomainError> {
        self.store.read(|snapshot| {
            snapshot
                .key(id)?
                .ok_or_else(|| DomainError::not_found(Resource::Key, id))
        })
    }

    /// A page of keys, revoked ones included.
    pub fn list_keys(&self, query: &KeyQuery) -> Result<Page<ApiKey>, DomainError> {
        let items = self.store.read(|snapshot| snapshot.keys(query))?;
        Ok(Page::from_probe(items, query.limit, |k| k.id.get()))
    }

    /// Revokes a key; it authenticates nothing from then on. Revoking a revoked key changes
    /// nothing. A key cannot revoke itself (`revoked_by`), so an admin cannot lock itself out
    /// by mistake; the command line, which uses no key, can revoke any.
    pub fn revoke_key(&self, id: KeyId, revoked_by: Option<KeyId>) -> Result<(), DomainError> {
        if revoked_by == Some(id) {
            return Err(DomainError::InvalidTransition(
                "a key cannot revoke itself; use another admin key or `petstore keys revoke`"
                    .into(),
            ));
        }
        let now = self.clock.now();
        self.store.write(|tx| {
            let key = tx
                .key(id)?
                .ok_or_else(|| DomainError::not_found(Resource::Key, id))?;
            if key.revoked_at.is_none() {
                tx.revoke_key(id, now)?;
            }
            Ok(())
        })
    }

    /// Makes `secret` an admin key if no admin key is active (a scripted deployment's
    /// bootstrap key). Returns the key when it was created.
    pub fn ensure_admin_key(&self, secret: &KeySecret) -> Result<Option<ApiKey>, DomainError> {
        self.bootstrap(secret, Some(Role::Admin), "bootstrap admin")
    }

    /// Makes `secret` an admin key if there is no key at all (a first start). Returns the key
    /// when it was created.
    pub fn create_first_admin_key(
        &self,
        secret: &KeySecret,
    ) -> Result<Option<ApiKey>, DomainError> {
        self.bootstrap(secret, None, "first admin")
    }

    fn bootstrap(
        &self,
        secret: &KeySecret,
        unless_active: Option<Role>,
        name: &str,
    ) -> Result<Option<ApiKey>, DomainError> {
        let now = self.clock.now();
        let new = NewApiKey {
            name: crate::values::Name::parse(name)?,
            role: Role::Admin,
        };
        self.store.write(|tx| {
            if tx.has_active_key(unless_active)? {
                return Ok(None);
            }
            tx.insert_key(&new, secret.prefix(), &secret.hash(), now)
                .map(Some)
        })
    }

    // ---- events ----------------------------------------------------------------------

    /// Up to `limit` events after `after`, oldest first.
    pub fn events_after(
        &self,
        after: Option<EventId>,
        limit: PageSize,
    ) -> Result<Vec<Event>, DomainError> {
        self.store
            .read(|snapshot| snapshot.events_after(after, limit.get()))
    }
}

fn existing_category(snapshot: &mut dyn Snapshot, id: CategoryId) -> Result<Category, DomainError> {
    snapshot
        .category(id)?
        .ok_or_else(|| DomainError::not_found(Resource::Category, id))
}

/// A category named in a body: its absence is the body's fault (422), not a missing resource.
fn known_category(snapshot: &mut dyn Snapshot, id: CategoryId) -> Result<(), DomainError> {
    match snapshot.category(id)? {
        Some(_) => Ok(()),
        None => Err(DomainError::UnknownCategory { id }),
    }
}

fn existing_pet(snapshot: &mut dyn Snapshot, id: PetId) -> Result<Pet, DomainError> {
    snapshot
        .pet(id)?
        .ok_or_else(|| DomainError::not_found(Resource::Pet, id))
}

fn visible_order(
    snapshot: &mut dyn Snapshot,
    id: OrderId,
    scope: OrderScope,
) -> Result<Order, DomainError> {
    snapshot
        .order(id)?
        .filter(|order| scope.allows(order.owner))
        .ok_or_else(|| DomainError::not_found(Resource::Order, id))
}

/// The pet of an open order. Open orders keep their pet from being deleted, so a missing
/// pet means the stored data is inconsistent.
fn order_pet(snapshot: &mut dyn Snapshot, order: &Order) -> Result<Pet, DomainError> {
    snapshot.pet(order.pet_id)?.ok_or_else(|| {
        DomainError::Storage(format!(
            "order {} is open but its pet {} is gone",
            order.id, order.pet_id
        ))
    })
}

fn pet_stock(snapshot: &mut dyn Snapshot, pet: &Pet) -> Result<PetStock, DomainError> {
    let item = snapshot
        .inventory_item(pet.id)?
        .ok_or_else(|| DomainError::Storage(format!("pet {} has no inventory entry", pet.id)))?;
    Ok(PetStock {
        pet_id: pet.id,
        status: pet.status,
        stock: item.quantity,
        open_orders: snapshot.open_order_count(pet.id)?,
    })
}

/// Writes what a rule decided: the stock level and the pet's status, where they changed.
fn apply(tx: &mut dyn Transaction, pet: &Pet, transition: &Transition) -> Result<(), DomainError> {
    let Transition { before, after, .. } = *transition;
    if after.status != before.status {
        tx.update_pet(&Pet {
            status: after.status,
            ..pet.clone()
        })?;
    }
    if after.stock != before.stock {
        tx.set_stock(pet.id, after.stock)?;
    }
    Ok(())
}

//! The use cases: every operation of the API, each one transaction.
//!
//! A use case loads the facts it needs, asks [`rules`](crate::rules) what follows, and writes
//! the new state together with its events. It never talks to HTTP or SQL.

use crate::access::{ApiKey, Caller, KeySecret, NewApiKey, Role, hashes_match};
use crate::clock::{Clock, SystemClock};
use crate::error::{DomainError, Resource};
use crate::events::{DomainEvent, Event};
use crate::idempotency::{IdempotencyKey, IdempotencyRecord, RECORD_LIFETIME, RecordedResponse};
use crate::ids::{CategoryId, EventId, KeyId, OrderId, OwnerId, PetId};
use crate::model::{
    Category, InventoryItem, NewCategory, NewOrder, NewPet, Order, OrderPatch, Pet,
};
use crate::precondition::{Always, Precondition};
use crate::query::{
    CategoryQuery, InventoryQuery, KeyQuery, OrderQuery, OrderScope, Page, PetQuery,
};
use crate::repository::{Snapshot, Store, Transaction};
use crate::rules::{PetStock, Transition};
use crate::values::{PageSize, Stock};

mod webhooks;

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

    /// Runs a create once per idempotency key: the effect, its events and the response
    /// `render` makes of it are committed together. A retry with the same key and request gets
    /// the recorded response and changes nothing; the same key with another request is refused.
    /// A refused request records nothing, so its retry runs again.
    fn once<T>(
        &self,
        key: &IdempotencyKey,
        render: impl FnOnce(&T) -> RecordedResponse,
        work: impl FnOnce(&mut dyn Transaction) -> Result<(T, Vec<DomainEvent>), DomainError>,
    ) -> Result<RecordedResponse, DomainError> {
        let time = self.clock.now();
        self.store.write(|tx| {
            tx.purge_idempotency_records(time - RECORD_LIFETIME)?;
            if let Some(record) = tx.idempotency_record(key.owner, &key.key)? {
                return if record.fingerprint == key.fingerprint {
                    Ok(record.response)
                } else {
                    Err(DomainError::IdempotencyKeyReused)
                };
            }
            let (value, events) = work(tx)?;
            tx.append_events(time, &events)?;
            let response = render(&value);
            let record = IdempotencyRecord {
                fingerprint: key.fingerprint,
                response: response.clone(),
                recorded_at: time,
            };
            tx.insert_idempotency_record(key.owner, &key.key, &record)?;
            Ok(response)
        })
    }

    // ---- categories ------------------------------------------------------------------

    /// Creates a category. Its name must not be taken, whatever the case.
    pub fn create_category(&self, new: NewCategory) -> Result<Category, DomainError> {
        self.change(|tx| create_category(tx, &new))
    }

    /// [`create_category`](Self::create_category), once per idempotency key (see
    /// [`idempotency`](crate::idempotency)); `render` makes the response to record.
    pub fn create_category_once(
        &self,
        new: NewCategory,
        key: &IdempotencyKey,
        render: impl FnOnce(&Category) -> RecordedResponse,
    ) -> Result<RecordedResponse, DomainError> {
        self.once(key, render, |tx| create_category(tx, &new))
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
        self.replace_category_if(id, new, Always)
    }

    /// [`replace_category`](Self::replace_category), if `condition` holds for the category as
    /// it is (see [`precondition`](crate::precondition)).
    pub fn replace_category_if(
        &self,
        id: CategoryId,
        new: NewCategory,
        condition: impl Precondition<Category>,
    ) -> Result<Category, DomainError> {
        self.change(|tx| {
            let current = existing_category(tx, id)?;
            require(&condition, &current, Resource::Category)?;
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
        self.delete_category_if(id, Always)
    }

    /// [`delete_category`](Self::delete_category), if `condition` holds for the category as it is.
    pub fn delete_category_if(
        &self,
        id: CategoryId,
        condition: impl Precondition<Category>,
    ) -> Result<(), DomainError> {
        self.change(|tx| {
            let current = existing_category(tx, id)?;
            require(&condition, &current, Resource::Category)?;
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
        self.change(|tx| create_pet(tx, &new))
    }

    /// [`create_pet`](Self::create_pet), once per idempotency key; `render` makes the response
    /// to record.
    pub fn create_pet_once(
        &self,
        new: NewPet,
        key: &IdempotencyKey,
        render: impl FnOnce(&Pet) -> RecordedResponse,
    ) -> Result<RecordedResponse, DomainError> {
        self.once(key, render, |tx| create_pet(tx, &new))
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
        self.replace_pet_if(id, new, Always)
    }

    /// [`replace_pet`](Self::replace_pet), if `condition` holds for the pet as it is.
    pub fn replace_pet_if(
        &self,
        id: PetId,
        new: NewPet,
        condition: impl Precondition<Pet>,
    ) -> Result<Pet, DomainError> {
        self.change(|tx| {
            let current = existing_pet(tx, id)?;
            require(&condition, &current, Resource::Pet)?;
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
        self.delete_pet_if(id, Always)
    }

    /// [`delete_pet`](Self::delete_pet), if `condition` holds for the pet as it is.
    pub fn delete_pet_if(
        &self,
        id: PetId,
        condition: impl Precondition<Pet>,
    ) -> Result<(), DomainError> {
        self.change(|tx| {
            let current = existing_pet(tx, id)?;
            require(&condition, &current, Resource::Pet)?;
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
        self.set_stock_if(pet_id, stock, Always)
    }

    /// [`set_stock`](Self::set_stock), if `condition` holds for the inventory entry as it is.
    pub fn set_stock_if(
        &self,
        pet_id: PetId,
        stock: Stock,
        condition: impl Precondition<InventoryItem>,
    ) -> Result<InventoryItem, DomainError> {
        self.change(|tx| {
            let pet = tx
                .pet(pet_id)?
                .ok_or_else(|| DomainError::not_found(Resource::InventoryItem, pet_id))?;
            let facts = pet_stock(tx, &pet)?;
            require(&condition, &facts.inventory_item(), Resource::InventoryItem)?;
            let transition = facts.set_stock(stock);
            apply(tx, &pet, &transition)?;
            Ok((transition.after.inventory_item(), transition.events))
        })
    }

    // ---- orders ----------------------------------------------------------------------

    /// Places an order: the units leave stock at once. `owner` is who may see and cancel it
    /// besides staff.
    pub fn place_order(&self, new: NewOrder, owner: Option<OwnerId>) -> Result<Order, DomainError> {
        self.change(|tx| place_order(tx, &new, owner))
    }

    /// [`place_order`](Self::place_order), once per idempotency key: a client retrying after a
    /// lost answer cannot order twice. `render` makes the response to record.
    pub fn place_order_once(
        &self,
        new: NewOrder,
        owner: Option<OwnerId>,
        key: &IdempotencyKey,
        render: impl FnOnce(&Order) -> RecordedResponse,
    ) -> Result<RecordedResponse, DomainError> {
        self.once(key, render, |tx| place_order(tx, &new, owner))
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
        self.update_order_if(id, patch, Always)
    }

    /// [`update_order`](Self::update_order), if `condition` holds for the order as it is.
    pub fn update_order_if(
        &self,
        id: OrderId,
        patch: OrderPatch,
        condition: impl Precondition<Order>,
    ) -> Result<Order, DomainError> {
        self.change(|tx| {
            let current = visible_order(tx, id, OrderScope::All)?;
            require(&condition, &current, Resource::Order)?;
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
        self.cancel_order_if(id, scope, Always)
    }

    /// [`cancel_order`](Self::cancel_order), if `condition` holds for the order as it is.
    pub fn cancel_order_if(
        &self,
        id: OrderId,
        scope: OrderScope,
        condition: impl Precondition<Order>,
    ) -> Result<(), DomainError> {
        self.change(|tx| {
            let order = visible_order(tx, id, scope)?;
            require(&condition, &order, Resource::Order)?;
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
        let hash = secret.hash();
        let mut found = None;
        for candidate in candidates {
            if hashes_match(&hash, &candidate.hash) && candidate.key.revoked_at.is_none() {
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
        self.revoke_key_if(id, revoked_by, Always)
    }

    /// [`revoke_key`](Self::revoke_key), if `condition` holds for the key as it is.
    pub fn revoke_key_if(
        &self,
        id: KeyId,
        revoked_by: Option<KeyId>,
        condition: impl Precondition<ApiKey>,
    ) -> Result<(), DomainError> {
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
            require(&condition, &key, Resource::Key)?;
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

    /// The id of the latest recorded event, if any: where a follower that wants only what
    /// happens from now on starts.
    pub fn last_event_id(&self) -> Result<Option<EventId>, DomainError> {
        self.store.read(|snapshot| snapshot.last_event_id())
    }

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

/// Refuses the change when the client's condition on the current state does not hold.
fn require<T>(
    condition: &impl Precondition<T>,
    current: &T,
    resource: Resource,
) -> Result<(), DomainError> {
    if condition.holds(current) {
        Ok(())
    } else {
        Err(DomainError::PreconditionFailed(resource))
    }
}

/// The create use cases' transactional bodies, shared by their plain and idempotent forms.
fn create_category(
    tx: &mut dyn Transaction,
    new: &NewCategory,
) -> Result<(Category, Vec<DomainEvent>), DomainError> {
    if tx.category_named(&new.name)?.is_some() {
        return Err(DomainError::CategoryExists {
            name: new.name.as_str().to_owned(),
        });
    }
    let category = tx.insert_category(new)?;
    Ok((
        category.clone(),
        vec![DomainEvent::CategoryCreated(category)],
    ))
}

fn create_pet(
    tx: &mut dyn Transaction,
    new: &NewPet,
) -> Result<(Pet, Vec<DomainEvent>), DomainError> {
    known_category(tx, new.category_id)?;
    let pet = tx.insert_pet(new)?;
    Ok((pet.clone(), vec![DomainEvent::PetCreated(pet)]))
}

fn place_order(
    tx: &mut dyn Transaction,
    new: &NewOrder,
    owner: Option<OwnerId>,
) -> Result<(Order, Vec<DomainEvent>), DomainError> {
    let pet = tx
        .pet(new.pet_id)?
        .ok_or(DomainError::UnknownPet { id: new.pet_id })?;
    let transition = pet_stock(tx, &pet)?.place_order(new.quantity)?;
    let order = tx.insert_order(new, owner)?;
    apply(tx, &pet, &transition)?;
    let mut events = vec![DomainEvent::OrderPlaced(order.clone())];
    events.extend(transition.events);
    Ok((order, events))
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

//! The catalogue's use cases: categories and pets. Changes are staff decisions.

use super::{Service, existing_category, existing_pet, known_category, pet_stock, require};
use crate::access::Caller;
use crate::clock::Clock;
use crate::error::{DomainError, Resource};
use crate::events::DomainEvent;
use crate::idempotency::{Idempotent, Outcome};
use crate::ids::{CategoryId, PetId};
use crate::ledger::Entry;
use crate::model::{Category, NewCategory, NewPet, Pet};
use crate::permission::Permission;
use crate::precondition::Precondition;
use crate::query::{CategoryQuery, Page, PetQuery};
use crate::repository::Store;

/// The use cases of categories; see [`Service::categories`].
#[derive(Debug)]
pub struct CategoryUseCases<'a, S, C> {
    pub(super) shop: &'a Service<S, C>,
}

impl<S: Store, C: Clock> CategoryUseCases<'_, S, C> {
    /// Creates a category (staff). Its name must not be taken, whatever the case.
    pub fn create(
        &self,
        caller: Caller,
        new: NewCategory,
        once: Option<Idempotent<'_, Category>>,
    ) -> Result<Outcome<Category>, DomainError> {
        caller.require(Permission::ManageStore)?;
        self.shop.create(caller, once, |tx| {
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
    pub fn get(&self, id: CategoryId) -> Result<Category, DomainError> {
        self.shop
            .store
            .read_one(|snapshot| existing_category(snapshot, id))
    }

    /// A page of categories.
    pub fn list(&self, query: &CategoryQuery) -> Result<Page<Category>, DomainError> {
        let items = self
            .shop
            .store
            .read_one(|snapshot| snapshot.categories(query))?;
        Ok(Page::from_probe(items, query.limit, |c| c.id.get()))
    }

    /// Replaces a category (staff), if `condition` holds for it as it is (see
    /// [`Precondition`]). Its new name must not be another category's.
    pub fn replace(
        &self,
        caller: Caller,
        id: CategoryId,
        new: NewCategory,
        condition: impl Precondition<Category>,
    ) -> Result<Category, DomainError> {
        caller.require(Permission::ManageStore)?;
        self.shop.change(|tx| {
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
                name: new.name.clone(),
                description: new.description.clone(),
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

    /// Deletes a category no pet belongs to (staff), if `condition` holds for it as it is.
    pub fn delete(
        &self,
        caller: Caller,
        id: CategoryId,
        condition: impl Precondition<Category>,
    ) -> Result<(), DomainError> {
        caller.require(Permission::ManageStore)?;
        self.shop.change(|tx| {
            let current = existing_category(tx, id)?;
            require(&condition, &current, Resource::Category)?;
            if tx.category_has_pets(id)? {
                return Err(DomainError::CategoryInUse { id });
            }
            tx.delete_category(id)?;
            Ok(((), vec![DomainEvent::CategoryDeleted(id)]))
        })
    }
}

/// The use cases of pets; see [`Service::pets`].
#[derive(Debug)]
pub struct PetUseCases<'a, S, C> {
    pub(super) shop: &'a Service<S, C>,
}

impl<S: Store, C: Clock> PetUseCases<'_, S, C> {
    /// Creates a pet (staff) in an existing category, with an inventory entry at 0.
    pub fn create(
        &self,
        caller: Caller,
        new: NewPet,
        once: Option<Idempotent<'_, Pet>>,
    ) -> Result<Outcome<Pet>, DomainError> {
        caller.require(Permission::ManageStore)?;
        self.shop.create(caller, once, |tx| {
            known_category(tx, new.category_id)?;
            let pet = tx.insert_pet(&new)?;
            Ok((pet.clone(), vec![DomainEvent::PetCreated(pet)]))
        })
    }

    /// The pet with this id.
    pub fn get(&self, id: PetId) -> Result<Pet, DomainError> {
        self.shop
            .store
            .read_one(|snapshot| existing_pet(snapshot, id))
    }

    /// A page of pets matching the query.
    pub fn list(&self, query: &PetQuery) -> Result<Page<Pet>, DomainError> {
        let items = self.shop.store.read_one(|snapshot| snapshot.pets(query))?;
        Ok(Page::from_probe(items, query.limit, |p| p.id.get()))
    }

    /// How many pets match the query after its `after` (its `limit` aside): with no `after`,
    /// how many a list of these filters holds in all. A stock list of the same filters
    /// ([`InventoryQuery::of_pets`](crate::InventoryQuery::of_pets)) holds as many entries.
    pub fn count(&self, query: &PetQuery) -> Result<u64, DomainError> {
        self.shop
            .store
            .read_one(|snapshot| snapshot.pet_count(query))
    }

    /// Replaces a pet's name, category and status (staff), if `condition` holds for it as it
    /// is. A status set here is a staff decision: it is recorded as a status change and no
    /// rule overrides it.
    pub fn replace(
        &self,
        caller: Caller,
        id: PetId,
        new: NewPet,
        condition: impl Precondition<Pet>,
    ) -> Result<Pet, DomainError> {
        caller.require(Permission::ManageStore)?;
        self.shop.change(|tx| {
            let current = existing_pet(tx, id)?;
            require(&condition, &current, Resource::Pet)?;
            known_category(tx, new.category_id)?;
            // The price is the pet's own resource: replacing the pet keeps it.
            let replaced = Pet {
                price: current.price,
                ..new.clone().into_pet(id)
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

    /// Deletes a pet and its inventory entry (staff), if `condition` holds for it as it is.
    /// Refused while the pet has open orders or units held.
    pub fn delete(
        &self,
        caller: Caller,
        id: PetId,
        condition: impl Precondition<Pet>,
    ) -> Result<(), DomainError> {
        caller.require(Permission::ManageStore)?;
        self.shop.change(|tx| {
            let current = existing_pet(tx, id)?;
            require(&condition, &current, Resource::Pet)?;
            let facts = pet_stock(tx, &current)?;
            if facts.open_orders > 0 || !facts.held.is_empty() {
                return Err(DomainError::PetHasOpenOrders { id });
            }
            // The units left leave the ledger with the pet, which keeps its movements.
            let transition = facts.write_off();
            self.shop
                .apply(tx, &current, &transition, Entry::default())?;
            tx.delete_pet(id)?;
            Ok(((), vec![DomainEvent::PetDeleted(id)]))
        })
    }
}

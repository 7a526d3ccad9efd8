//! The inventory's use cases: reading stock, and setting it (which moves the pet's status).

use super::{Service, apply, pet_stock, require};
use crate::access::Caller;
use crate::clock::Clock;
use crate::error::{DomainError, Resource};
use crate::ids::PetId;
use crate::model::InventoryItem;
use crate::permission::Permission;
use crate::precondition::Precondition;
use crate::query::{InventoryQuery, Page};
use crate::repository::Store;
use crate::values::Stock;

/// The use cases of stock; see [`Service::inventory`].
#[derive(Debug)]
pub struct InventoryUseCases<'a, S, C> {
    pub(super) shop: &'a Service<S, C>,
}

impl<S: Store, C: Clock> InventoryUseCases<'_, S, C> {
    /// The inventory entry of a pet.
    pub fn get(&self, pet_id: PetId) -> Result<InventoryItem, DomainError> {
        self.shop.store.read_one(|snapshot| {
            snapshot
                .inventory_item(pet_id)?
                .ok_or_else(|| DomainError::not_found(Resource::InventoryItem, pet_id))
        })
    }

    /// A page of inventory entries.
    pub fn list(&self, query: &InventoryQuery) -> Result<Page<InventoryItem>, DomainError> {
        let items = self
            .shop
            .store
            .read_one(|snapshot| snapshot.inventory(query))?;
        Ok(Page::from_probe(items, query.limit, |i| i.pet_id.get()))
    }

    /// Sets a pet's stock level (staff), if `condition` holds for the inventory entry as it
    /// is; the pet's status follows the stock rules.
    pub fn set_stock(
        &self,
        caller: Caller,
        pet_id: PetId,
        stock: Stock,
        condition: impl Precondition<InventoryItem>,
    ) -> Result<InventoryItem, DomainError> {
        caller.require(Permission::ManageStore)?;
        self.shop.change(|tx| {
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
}

//! The inventory's use cases: reading stock, setting and adjusting it (which moves the pet's
//! status), and reading its ledger.

use super::{Service, pet_stock, require};
use crate::access::Caller;
use crate::clock::Clock;
use crate::error::{DomainError, Resource};
use crate::ids::PetId;
use crate::ledger::{Adjustment, Entry, Movement, MovementQuery};
use crate::model::InventoryItem;
use crate::permission::Permission;
use crate::precondition::Precondition;
use crate::query::{InventoryQuery, Page};
use crate::repository::Store;
use crate::rules::{PetStock, Transition};
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
        self.restock(caller, pet_id, condition, Entry::default(), |facts| {
            let transition = facts.set_stock(stock);
            // The soak's planted bug (bench/chaos --plant set-without-row): no movement.
            #[cfg(feature = "plant-set-without-row")]
            let transition = crate::rules::Transition {
                change: None,
                ..transition
            };
            Ok(transition)
        })
    }

    /// Adjusts a pet's stock (staff) by the adjustment's units, for its reason, if
    /// `condition` holds for the inventory entry as it is: refused (`412`) too when the
    /// adjustment names the level it expects and the stock is another, so that a retry of an
    /// adjustment that was made is refused rather than made twice. The pet's status follows the
    /// stock rules, as when stock is set.
    pub fn adjust(
        &self,
        caller: Caller,
        pet_id: PetId,
        adjustment: Adjustment,
        condition: impl Precondition<InventoryItem>,
    ) -> Result<InventoryItem, DomainError> {
        let entry = Entry::because(adjustment.reason);
        self.restock(caller, pet_id, condition, entry, |facts| {
            match adjustment.change_from_quantity {
                Some(expected) if expected != facts.stock => {
                    Err(DomainError::PreconditionFailed(Resource::InventoryItem))
                }
                _ => facts.adjust(adjustment.change),
            }
        })
    }

    /// A change of a pet's stock by staff, if `condition` holds for its inventory entry: what
    /// `rule` decides, recorded as part of `entry`.
    fn restock(
        &self,
        caller: Caller,
        pet_id: PetId,
        condition: impl Precondition<InventoryItem>,
        entry: Entry,
        rule: impl Fn(PetStock) -> Result<Transition, DomainError>,
    ) -> Result<InventoryItem, DomainError> {
        caller.require(Permission::ManageStore)?;
        self.shop.change(|tx| {
            let pet = tx
                .pet(pet_id)?
                .ok_or_else(|| DomainError::not_found(Resource::InventoryItem, pet_id))?;
            let facts = pet_stock(tx, &pet)?;
            require(&condition, &facts.inventory_item(), Resource::InventoryItem)?;
            let transition = rule(facts)?;
            self.shop.apply(tx, &pet, &transition, entry.clone())?;
            Ok((transition.after.inventory_item(), transition.events))
        })
    }

    /// A page of a pet's stock movements (staff), oldest first. A pet that is gone keeps its
    /// movements; an id no pet ever had has none.
    pub fn movements(
        &self,
        caller: Caller,
        query: &MovementQuery,
    ) -> Result<Page<Movement>, DomainError> {
        caller.require(Permission::ManageStore)?;
        let items = self
            .shop
            .store
            .read_one(|snapshot| snapshot.movements(query))?;
        Ok(Page::from_probe(items, query.limit, |m| m.id.get()))
    }
}

//! Pets' prices: a sub-resource of the pet, so a client that replaces a pet without knowing
//! prices cannot clear one. Setting and removing are staff decisions; anyone reads.

use super::{Service, existing_pet, require};
use crate::access::Caller;
use crate::clock::Clock;
use crate::error::{DomainError, Resource};
use crate::events::DomainEvent;
use crate::ids::PetId;
use crate::model::Pet;
use crate::money::{Amount, PetPrice, Price};
use crate::permission::Permission;
use crate::precondition::Precondition;
use crate::repository::Store;

/// The use cases of prices; see [`Service::prices`].
#[derive(Debug)]
pub struct PriceUseCases<'a, S, C> {
    pub(super) shop: &'a Service<S, C>,
}

impl<S: Store, C: Clock> PriceUseCases<'_, S, C> {
    /// Pet `pet_id`'s price; not found when the pet has none.
    pub fn get(&self, pet_id: PetId) -> Result<PetPrice, DomainError> {
        let pet = self
            .shop
            .store
            .read_one(|snapshot| existing_pet(snapshot, pet_id))?;
        priced(&pet)
    }

    /// Sets pet `pet_id`'s price to `amount` in the shop's currency (staff), if `condition`
    /// holds for its price as it is (`None`: it has none). A new amount is a change of the
    /// pet, told by `pet.updated`; the same amount again changes nothing.
    pub fn set(
        &self,
        caller: Caller,
        pet_id: PetId,
        amount: Amount,
        condition: impl Precondition<Option<PetPrice>>,
    ) -> Result<PetPrice, DomainError> {
        caller.require(Permission::ManageStore)?;
        let price = Price {
            amount,
            currency: self.shop.currency(),
        };
        self.shop.change(|tx| {
            let pet = existing_pet(tx, pet_id)?;
            let current = pet.price.map(|price| PetPrice::of(pet_id, price));
            require(&condition, &current, Resource::Price)?;
            let answer = PetPrice::of(pet_id, price);
            if pet.price == Some(price) {
                return Ok((answer, Vec::new()));
            }
            tx.set_pet_price(pet_id, Some(price))?;
            let priced = Pet {
                price: Some(price),
                ..pet
            };
            Ok((answer, vec![DomainEvent::PetUpdated(priced)]))
        })
    }

    /// Removes pet `pet_id`'s price (staff), if `condition` holds for it as it is; not found
    /// when it has none. The pet can still be ordered, unpriced, but not checked out.
    pub fn remove(
        &self,
        caller: Caller,
        pet_id: PetId,
        condition: impl Precondition<Option<PetPrice>>,
    ) -> Result<(), DomainError> {
        caller.require(Permission::ManageStore)?;
        self.shop.change(|tx| {
            let pet = existing_pet(tx, pet_id)?;
            let current = priced(&pet)?;
            require(&condition, &Some(current), Resource::Price)?;
            tx.set_pet_price(pet_id, None)?;
            let unpriced = Pet { price: None, ..pet };
            Ok(((), vec![DomainEvent::PetUpdated(unpriced)]))
        })
    }
}

/// The pet's price as its own resource, or not found.
fn priced(pet: &Pet) -> Result<PetPrice, DomainError> {
    pet.price
        .map(|price| PetPrice::of(pet.id, price))
        .ok_or_else(|| DomainError::not_found(Resource::Price, pet.id))
}

//! Categories and pets in memory.

use std::borrow::Borrow;

use super::{Catalogue, View};
use super::{next_id, page, page_either};
use crate::ids::{CategoryId, PetId};
use crate::model::{Category, NewCategory, NewPet, Pet};
use crate::money::Price;
use crate::query::{CategoryQuery, PetQuery, PetSort, fold_case};
use crate::repository::{CatalogueReader, CatalogueWriter, RepoResult};
use crate::values::{Name, Stock};

impl<C: Borrow<Catalogue>> CatalogueReader for View<'_, C> {
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
        Ok(pet_page(self.catalogue.borrow(), query))
    }

    fn pet_count(&mut self, query: &PetQuery) -> RepoResult<u64> {
        let catalogue = self.catalogue.borrow();
        let found = finds(catalogue, query);
        let counted = catalogue
            .pets
            .values()
            .filter(|pet| found(pet) && query.is_past(pet.id, pet.name.as_str()))
            .count();
        Ok(counted as u64)
    }
}

/// The pets `query` asks for, in its order: up to a page and one more.
pub(super) fn pet_page(catalogue: &Catalogue, query: &PetQuery) -> Vec<Pet> {
    let found = finds(catalogue, query);
    if query.sort == PetSort::Added {
        let from = (query.after, query.newest_first);
        return page_either(&catalogue.pets, from, query.limit, found);
    }
    let mut pets: Vec<(String, &Pet)> = catalogue
        .pets
        .values()
        .filter(|pet| found(pet) && query.is_past(pet.id, pet.name.as_str()))
        .map(|pet| (fold_case(pet.name.as_str()), pet))
        .collect();
    pets.sort_by(|(a, x), (b, y)| (a, x.id).cmp(&(b, y.id)));
    if query.newest_first {
        pets.reverse();
    }
    pets.into_iter()
        .take(query.limit.get() as usize + 1)
        .map(|(_, pet)| pet.clone())
        .collect()
}

/// Whether `query` finds a pet of `catalogue` (its position and size aside).
pub(super) fn finds<'q>(
    catalogue: &'q Catalogue,
    query: &'q PetQuery,
) -> impl Fn(&Pet) -> bool + 'q {
    let needle = query.name_contains.as_deref().map(fold_case);
    move |pet: &Pet| {
        query.status.is_none_or(|s| pet.status == s)
            && query.category_id.is_none_or(|c| pet.category_id == c)
            && (query.ids.is_empty() || query.ids.contains(&pet.id))
            && needle
                .as_deref()
                .is_none_or(|n| fold_case(pet.name.as_str()).contains(n))
            && query.stock_at_most.is_none_or(|most| {
                catalogue
                    .stock
                    .get(&pet.id)
                    .is_some_and(|stock| *stock <= most)
            })
    }
}

impl CatalogueWriter for View<'_, Catalogue> {
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
        let pet = new.clone().into_pet(id);
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
        *slot = Pet {
            price: slot.price,
            ..pet.clone()
        };
        Ok(())
    }

    fn set_pet_price(&mut self, id: PetId, price: Option<Price>) -> RepoResult<()> {
        let slot = self
            .catalogue
            .pets
            .get_mut(&id)
            .ok_or_else(|| Self::missing("pet", id))?;
        slot.price = price;
        Ok(())
    }

    fn delete_pet(&mut self, id: PetId) -> RepoResult<()> {
        self.catalogue.pets.remove(&id);
        self.catalogue.stock.remove(&id);
        Ok(())
    }
}

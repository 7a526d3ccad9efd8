//! Stock levels in memory.

use std::borrow::Borrow;

use super::catalogue::pet_page;
use super::inventory_item;
use super::{Catalogue, View};
use crate::ids::PetId;
use crate::model::InventoryItem;
use crate::query::InventoryQuery;
use crate::repository::{InventoryReader, InventoryWriter, RepoResult};
use crate::values::Stock;

impl<C: Borrow<Catalogue>> InventoryReader for View<'_, C> {
    fn inventory_item(&mut self, pet_id: PetId) -> RepoResult<Option<InventoryItem>> {
        let catalogue = self.catalogue.borrow();
        Ok(catalogue
            .pets
            .get(&pet_id)
            .map(|pet| inventory_item(catalogue, pet)))
    }

    fn inventory(&mut self, query: &InventoryQuery) -> RepoResult<Vec<InventoryItem>> {
        let catalogue = self.catalogue.borrow();
        let pets = pet_page(catalogue, &query.pets());
        Ok(pets
            .iter()
            .map(|pet| inventory_item(catalogue, pet))
            .collect())
    }
}

impl InventoryWriter for View<'_, Catalogue> {
    fn set_stock(&mut self, pet_id: PetId, stock: Stock) -> RepoResult<()> {
        let slot = self
            .catalogue
            .stock
            .get_mut(&pet_id)
            .ok_or_else(|| Self::missing("inventory entry", pet_id))?;
        *slot = stock;
        Ok(())
    }
}

//! Stock levels: a column of `pets`, so a pet and its stock change in one row.

use diesel::prelude::*;
use petstore_core::{
    InventoryItem, InventoryQuery, InventoryReader, InventoryWriter, PetId, RepoResult, Stock,
};

use super::catalogue::{matching_pets, pet_rows};
use super::{Tx, row_for_update};
use crate::error::QueryResultExt;
use crate::records::StockRecord;
use crate::schema::pets;
use crate::statements::{convert, convert_one, exactly_one};

impl InventoryReader for Tx<'_> {
    fn inventory_item(&mut self, pet_id: PetId) -> RepoResult<Option<InventoryItem>> {
        if let Some(known) = self.known().stock(pet_id) {
            return Ok(known);
        }
        // In a write transaction the pet's row is locked until it ends: its status, stock and
        // open orders are what the stock rules decide on, so two orders for the same pet take
        // turns, and neither sells a unit the other took.
        let row = row_for_update!(
            self,
            pets::table
                .find(pet_id.get())
                .select(StockRecord::as_select())
        )
        .or_storage()?;
        convert_one(row)
    }

    fn inventory(&mut self, query: &InventoryQuery) -> RepoResult<Vec<InventoryItem>> {
        let rows = pet_rows!(self, &query.pets(), StockRecord::as_select())?;
        convert(rows)
    }
}

impl InventoryWriter for Tx<'_> {
    fn set_stock(&mut self, pet_id: PetId, stock: Stock) -> RepoResult<()> {
        self.forget_pet_row(Some(pet_id));
        let affected = self
            .set_stock_row(pet_id.get(), i64::from(stock.get()))
            .or_storage()?;
        exactly_one(affected, "pet", pet_id.get())
    }
}

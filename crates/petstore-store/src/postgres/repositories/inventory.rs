//! Stock levels: a column of `pets`, so a pet and its stock change in one row.

use diesel::prelude::*;
use petstore_core::{
    InventoryItem, InventoryQuery, InventoryReader, InventoryWriter, PetId, PetQuery, RepoResult,
    Stock,
};

use super::PgTx;
use crate::error::QueryResultExt;
use crate::postgres::schema::pets;
use crate::records::PetRecord;
use crate::statements::exactly_one;

impl InventoryReader for PgTx<'_> {
    fn inventory_item(&mut self, pet_id: PetId) -> RepoResult<Option<InventoryItem>> {
        let row = self.pet_row(pet_id)?;
        Ok(row.map(PetRecord::into_inventory_item).transpose()?)
    }

    fn inventory(&mut self, query: &InventoryQuery) -> RepoResult<Vec<InventoryItem>> {
        let rows = self.pet_rows(&PetQuery {
            status: query.status,
            after: query.after,
            limit: query.limit,
            ..PetQuery::default()
        })?;
        Ok(rows
            .into_iter()
            .map(PetRecord::into_inventory_item)
            .collect::<Result<_, _>>()?)
    }
}

impl InventoryWriter for PgTx<'_> {
    fn set_stock(&mut self, pet_id: PetId, stock: Stock) -> RepoResult<()> {
        let affected = diesel::update(pets::table.find(pet_id.get()))
            .set(pets::stock.eq(i64::from(stock.get())))
            .execute(self.conn)
            .or_storage()?;
        exactly_one(affected, "pet", pet_id.get())
    }
}

//! Stock levels: a column of `pets`, so a pet and its stock change in one row.

use super::SqliteTx;
use super::catalogue::pet_rows;
use crate::error::QueryResultExt;
use crate::sqlite::prepared::SetStock;
use crate::sqlite::rows::{STOCK_COLUMNS, StockRow};
use crate::sqlite::schema::pets;
use crate::statements::exactly_one;
use diesel::prelude::*;
use petstore_core::{InventoryItem, InventoryQuery, PetId, PetQuery, RepoResult, Stock};
use petstore_core::{InventoryReader, InventoryWriter};

impl InventoryReader for SqliteTx<'_> {
    fn inventory_item(&mut self, pet_id: PetId) -> RepoResult<Option<InventoryItem>> {
        let row: Option<StockRow> = pets::table
            .find(pet_id.get())
            .select(STOCK_COLUMNS)
            .get_result(self.conn)
            .optional()
            .or_storage()?;
        Ok(row.map(StockRow::into_item).transpose()?)
    }

    fn inventory(&mut self, query: &InventoryQuery) -> RepoResult<Vec<InventoryItem>> {
        let pets = PetQuery {
            status: query.status,
            after: query.after,
            limit: query.limit,
            ..PetQuery::default()
        };
        let rows: Vec<StockRow> = pet_rows!(self.conn, &pets, STOCK_COLUMNS)?;
        Ok(rows
            .into_iter()
            .map(StockRow::into_item)
            .collect::<Result<_, _>>()?)
    }
}

impl InventoryWriter for SqliteTx<'_> {
    fn set_stock(&mut self, pet_id: PetId, stock: Stock) -> RepoResult<()> {
        let affected = SetStock {
            pet_id: pet_id.get(),
            stock: i64::from(stock.get()),
        }
        .execute(self.conn)
        .or_storage()?;
        exactly_one(affected, "pet", pet_id.get())
    }
}

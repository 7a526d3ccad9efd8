//! Orders, in the `orders` table.

use diesel::prelude::*;
use petstore_core::{
    DomainError, NewOrder, Order, OrderId, OrderQuery, OrderReader, OrderWriter, OwnerId, PetId,
    Price, RepoResult, Stock,
};

use super::{Tx, row_for_update};
use crate::error::{QueryResultExt, Rule, StoreError, Violation};
use crate::records::OrderRecord;
use crate::schema::sql_types::Time;
use crate::schema::{orders, pets};
use crate::statements::{convert, convert_one, exactly_one, probe, refuse};

impl OrderReader for Tx<'_> {
    fn order(&mut self, id: OrderId) -> RepoResult<Option<Order>> {
        // Completing or cancelling an order waits for any other change to it; one that was
        // cancelled meanwhile is then not found.
        let row = row_for_update!(
            self,
            orders::table
                .find(id.get())
                .select(OrderRecord::as_select())
        )
        .or_storage()?;
        convert_one(row)
    }

    fn orders(&mut self, query: &OrderQuery) -> RepoResult<Vec<Order>> {
        let mut sql = orders::table
            .select(OrderRecord::as_select())
            .order(orders::id.asc())
            .into_boxed();
        if let Some(after) = query.after {
            sql = sql.filter(orders::id.gt(after.get()));
        }
        if let Some(pet) = query.pet_id {
            sql = sql.filter(orders::pet_id.eq(pet.get()));
        }
        if let Some(complete) = query.complete {
            sql = sql.filter(orders::complete.eq(complete));
        }
        if let Some(owner) = query.owner {
            sql = sql.filter(orders::owner_id.eq(owner.get()));
        }
        convert(self.page(sql, probe(query.limit)).or_storage()?)
    }

    fn open_order_count(&mut self, pet_id: PetId) -> RepoResult<u64> {
        if let Some(count) = self.known().open_orders(pet_id) {
            return Ok(count);
        }
        // A counter kept by triggers (see the migration): O(1) however many orders exist.
        let count: Option<i64> = pets::table
            .find(pet_id.get())
            .select(pets::open_orders)
            .get_result(self.flushed())
            .optional()
            .or_storage()?;
        Ok(count.unwrap_or(0).unsigned_abs())
    }

    fn committed_units(&mut self, pet_id: PetId) -> RepoResult<Stock> {
        if let Some(units) = self.known().committed(pet_id) {
            return Ok(units);
        }
        // Kept by the triggers on orders, as the count is.
        let units: Option<i64> = pets::table
            .find(pet_id.get())
            .select(pets::committed)
            .get_result(self.flushed())
            .optional()
            .or_storage()?;
        u32::try_from(units.unwrap_or(0))
            .map(Stock::from_level)
            .map_err(|_| DomainError::storage(format!("pet {pet_id}'s committed units")))
    }
}

impl OrderWriter for Tx<'_> {
    fn insert_order(
        &mut self,
        new: &NewOrder,
        owner: Option<OwnerId>,
        price: Option<Price>,
    ) -> RepoResult<Order> {
        self.forget_pet_row(Some(new.pet_id));
        // Each backend's own: SQLite inserts it at once, PostgreSQL holds it back with the
        // write's other rows, its id taken beforehand (`held_back.rs`).
        let id = self.place_order_row(new, owner, price)?;
        let id = OrderId::new(id).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        Ok(new.clone().into_order(id, owner, price))
    }

    fn update_order(&mut self, order: &Order) -> RepoResult<()> {
        self.forget_pet_row(Some(order.pet_id));
        let affected = diesel::update(orders::table.find(order.id.get()))
            .set((
                orders::ship_date.eq(order.ship_date.map(Time)),
                orders::complete.eq(order.complete),
            ))
            .execute(self.flushed())
            .map_err(|e| {
                refuse(e, |v| {
                    (v == Violation::Rule(Rule::InvalidTransition)).then_some(
                        DomainError::InvalidTransition(
                            "a complete order cannot be made open again".into(),
                        ),
                    )
                })
            })?;
        exactly_one(affected, "order", order.id.get())
    }

    fn delete_order(&mut self, id: OrderId) -> RepoResult<()> {
        // The order's pet is not known here: every fetched row goes.
        self.forget_pet_row(None);
        let affected = diesel::delete(orders::table.find(id.get()))
            .execute(self.flushed())
            .map_err(|e| {
                refuse(e, |v| {
                    (v == Violation::Rule(Rule::OrderNotCancellable))
                        .then_some(DomainError::OrderNotCancellable { id })
                })
            })?;
        exactly_one(affected, "order", id.get())
    }
}

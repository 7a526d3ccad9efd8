//! Orders, in the `orders` table.

use super::SqliteTx;
use crate::error::{QueryResultExt, Rule, StoreError, Violation};
use crate::sqlite::limit::limited;
use crate::sqlite::rows::{NewOrderRow, OrderRow, format_time};
use crate::sqlite::schema::{orders, pets};
use crate::statements::{convert, convert_one, exactly_one, probe, refuse};
use diesel::prelude::*;
use petstore_core::{
    DomainError, NewOrder, Order, OrderId, OrderQuery, OwnerId, PetId, RepoResult,
};
use petstore_core::{OrderReader, OrderWriter};

impl OrderReader for SqliteTx<'_> {
    fn order(&mut self, id: OrderId) -> RepoResult<Option<Order>> {
        let row = orders::table
            .find(id.get())
            .select(OrderRow::as_select())
            .get_result(self.conn)
            .optional()
            .or_storage()?;
        convert_one(row)
    }

    fn orders(&mut self, query: &OrderQuery) -> RepoResult<Vec<Order>> {
        let mut sql = orders::table
            .select(OrderRow::as_select())
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
        convert(
            limited(sql, probe(query.limit))
                .load(self.conn)
                .or_storage()?,
        )
    }

    fn open_order_count(&mut self, pet_id: PetId) -> RepoResult<u64> {
        // A counter kept by triggers (see the migration): O(1) however many orders exist.
        let count: Option<i64> = pets::table
            .find(pet_id.get())
            .select(pets::open_orders)
            .get_result(self.conn)
            .optional()
            .or_storage()?;
        Ok(count.unwrap_or(0).unsigned_abs())
    }
}

impl OrderWriter for SqliteTx<'_> {
    fn insert_order(&mut self, new: &NewOrder, owner: Option<OwnerId>) -> RepoResult<Order> {
        let row = NewOrderRow {
            pet_id: new.pet_id.get(),
            quantity: i64::from(new.quantity.get()),
            ship_date: new.ship_date.map(format_time),
            complete: false,
            owner_id: owner.map(OwnerId::get),
        };
        let id: i64 = diesel::insert_into(orders::table)
            .values(&row)
            .returning(orders::id)
            .get_result(self.conn)
            .map_err(|e| {
                refuse(e, |v| {
                    (v == Violation::Rule(Rule::UnknownPet))
                        .then_some(DomainError::UnknownPet { id: new.pet_id })
                })
            })?;
        let id = OrderId::new(id).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        Ok(new.clone().into_order(id, owner))
    }

    fn update_order(&mut self, order: &Order) -> RepoResult<()> {
        let affected = diesel::update(orders::table.find(order.id.get()))
            .set((
                orders::ship_date.eq(order.ship_date.map(format_time)),
                orders::complete.eq(order.complete),
            ))
            .execute(self.conn)
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
        let affected = diesel::delete(orders::table.find(id.get()))
            .execute(self.conn)
            .map_err(|e| {
                refuse(e, |v| {
                    (v == Violation::Rule(Rule::OrderNotCancellable))
                        .then_some(DomainError::OrderNotCancellable { id })
                })
            })?;
        exactly_one(affected, "order", id.get())
    }
}

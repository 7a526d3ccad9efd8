//! Orders, in the `orders` table.

use std::collections::HashMap;

use diesel::prelude::*;
use petstore_core::{
    DomainError, NewOrder, Order, OrderId, OrderLine, OrderQuery, OrderReader, OrderWriter,
    OwnerId, PetId, PlacedCheckout, Price, RepoResult, Stock,
};

use super::{Tx, row_for_update};
use crate::error::{QueryResultExt, Rule, StoreError, Violation};
use crate::records::{OrderLineRecord, OrderRecord};
use crate::schema::sql_types::Time;
use crate::schema::{order_lines, orders, pets};
use crate::statements::{exactly_one, probe, refuse};

/// `sql`, a boxed query of `orders`, narrowed to the orders `query`'s filters find after its
/// `after` in its direction (its order and limit are the caller's to add).
macro_rules! matching_orders {
    ($sql:expr, $query:expr) => {{
        let query: &OrderQuery = $query;
        let mut sql = $sql;
        if let Some(after) = query.after {
            sql = if query.newest_first {
                sql.filter(orders::id.lt(after.get()))
            } else {
                sql.filter(orders::id.gt(after.get()))
            };
        }
        if let Some(pet) = query.pet_id {
            let on_a_later_line = order_lines::table
                .filter(order_lines::pet_id.eq(pet.get()))
                .select(order_lines::order_id);
            sql = sql.filter(
                orders::pet_id
                    .eq(pet.get())
                    .or(orders::id.eq_any(on_a_later_line)),
            );
        }
        if let Some(complete) = query.complete {
            sql = sql.filter(orders::complete.eq(complete));
        }
        if let Some(owner) = query.owner {
            sql = sql.filter(orders::owner_id.eq(owner.get()));
        }
        sql
    }};
}

impl OrderReader for Tx<'_> {
    fn order(&mut self, id: OrderId) -> RepoResult<Option<Order>> {
        if self.locks_rows() {
            // Completing or cancelling an order waits for any other change to it; one that
            // was cancelled meanwhile is then not found. Its lines never change.
            let row = row_for_update!(
                self,
                orders::table
                    .find(id.get())
                    .select(OrderRecord::as_select())
            )
            .or_storage()?;
            return self
                .with_lines(row.into_iter().collect())
                .map(|mut found| found.pop());
        }
        // One statement, so that a point read sees the order and its lines at one moment.
        let rows: Vec<(OrderRecord, Option<OrderLineRecord>)> = orders::table
            .left_join(order_lines::table.on(order_lines::order_id.eq(orders::id)))
            .filter(orders::id.eq(id.get()))
            .order(order_lines::line_no.asc())
            .select((
                OrderRecord::as_select(),
                Option::<OrderLineRecord>::as_select(),
            ))
            .load(self.flushed())
            .or_storage()?;
        let mut order = None;
        let mut more = Vec::new();
        for (row, line) in rows {
            order.get_or_insert(row);
            more.extend(line);
        }
        order.map(|row| assemble(row, more)).transpose()
    }

    fn orders(&mut self, query: &OrderQuery) -> RepoResult<Vec<Order>> {
        let sql = matching_orders!(
            orders::table.select(OrderRecord::as_select()).into_boxed(),
            query
        );
        let sql = if query.newest_first {
            sql.order(orders::id.desc())
        } else {
            sql.order(orders::id.asc())
        };
        let rows = self.page(sql, probe(query.limit)).or_storage()?;
        self.with_lines(rows)
    }

    fn order_count(&mut self, query: &OrderQuery) -> RepoResult<u64> {
        let sql = matching_orders!(orders::table.into_boxed(), query);
        let count: i64 = sql
            .select(diesel::dsl::count_star())
            .get_result(self.flushed())
            .or_storage()?;
        Ok(count.unsigned_abs())
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

impl Tx<'_> {
    /// The orders of `rows`, each with its lines 2 and on, read in one more statement when
    /// any has them (a list runs in a read transaction: `OrderUseCases::list`).
    fn with_lines(&mut self, rows: Vec<OrderRecord>) -> RepoResult<Vec<Order>> {
        let several: Vec<i64> = rows
            .iter()
            .filter(|row| row.line_count > 1)
            .map(|row| row.id)
            .collect();
        let mut lines: HashMap<i64, Vec<OrderLineRecord>> = HashMap::new();
        if !several.is_empty() {
            let found: Vec<OrderLineRecord> = order_lines::table
                .filter(order_lines::order_id.eq_any(several))
                .order((order_lines::order_id, order_lines::line_no))
                .select(OrderLineRecord::as_select())
                .load(self.flushed())
                .or_storage()?;
            for line in found {
                lines.entry(line.order_id).or_default().push(line);
            }
        }
        rows.into_iter()
            .map(|row| {
                let more = lines.remove(&row.id).unwrap_or_default();
                assemble(row, more)
            })
            .collect()
    }
}

/// An order from its row and its lines 2 and on (in order), which must be all it has.
fn assemble(row: OrderRecord, more: Vec<OrderLineRecord>) -> RepoResult<Order> {
    let expected = usize::try_from(row.line_count - 1).unwrap_or(usize::MAX);
    if more.len() != expected {
        return Err(StoreError::Corrupt(format!(
            "orders row {}: {} lines, {} stored",
            row.id,
            row.line_count,
            more.len() + 1
        ))
        .into());
    }
    let order = Order::try_from(row)?;
    let more = more
        .into_iter()
        .map(OrderLine::try_from)
        .collect::<Result<Vec<_>, StoreError>>()?;
    Ok(if more.is_empty() {
        order
    } else {
        order.with_more_lines(more)
    })
}

impl OrderWriter for Tx<'_> {
    fn insert_order(
        &mut self,
        new: &NewOrder,
        owner: Option<OwnerId>,
        price: Option<Price>,
    ) -> RepoResult<Order> {
        self.insert_checkout(&PlacedCheckout::of_order(new, owner, price))
    }

    fn insert_checkout(&mut self, checkout: &PlacedCheckout) -> RepoResult<Order> {
        // The triggers on orders and order_lines change the row of every line's pet.
        for line in std::iter::once(&checkout.first).chain(&checkout.more) {
            self.forget_pet_row(Some(line.pet_id));
        }
        let first = NewOrder {
            ship_date: checkout.ship_date,
            ..NewOrder::new(checkout.first.pet_id, checkout.first.quantity)
        };
        let line_count = i64::try_from(checkout.more.len() + 1).unwrap_or(i64::MAX);
        // Each backend's own: SQLite inserts them at once, PostgreSQL holds them back with
        // the write's other rows, the order's id taken beforehand (`held_back.rs`).
        let id = self.place_order_row(&first, checkout.owner, checkout.first.price, line_count)?;
        if !checkout.more.is_empty() {
            self.insert_line_rows(id, &checkout.more)?;
        }
        let id = OrderId::new(id).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        Ok(checkout.clone().into_order(id))
    }

    fn update_order(&mut self, order: &Order) -> RepoResult<()> {
        // The triggers change the rows of every line's pet.
        for line in &order.lines {
            self.forget_pet_row(Some(line.pet_id));
        }
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

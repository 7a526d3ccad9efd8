//! Orders in memory.

use std::borrow::Borrow;

use super::{Catalogue, View};
use super::{count_after, next_id, page_either};
use crate::checkout::PlacedCheckout;
use crate::ids::{OrderId, OwnerId, PetId};
use crate::model::{NewOrder, Order};
use crate::money::Price;
use crate::query::OrderQuery;
use crate::repository::{OrderReader, OrderWriter, RepoResult};
use crate::values::Stock;

impl<C: Borrow<Catalogue>> OrderReader for View<'_, C> {
    fn order(&mut self, id: OrderId) -> RepoResult<Option<Order>> {
        Ok(self.catalogue.borrow().orders.get(&id).cloned())
    }

    fn orders(&mut self, query: &OrderQuery) -> RepoResult<Vec<Order>> {
        let catalogue = self.catalogue.borrow();
        let from = (query.after, query.newest_first);
        Ok(page_either(&catalogue.orders, from, query.limit, |order| {
            matches(query, order)
        }))
    }

    fn order_count(&mut self, query: &OrderQuery) -> RepoResult<u64> {
        let from = (query.after, query.newest_first);
        let orders = &self.catalogue.borrow().orders;
        Ok(count_after(orders, from, |order| matches(query, order)))
    }

    fn open_order_count(&mut self, pet_id: PetId) -> RepoResult<u64> {
        let open = self
            .catalogue
            .borrow()
            .orders
            .values()
            .filter(|o| !o.complete && o.lines.iter().any(|l| l.pet_id == pet_id))
            .count();
        Ok(open as u64)
    }

    fn committed_units(&mut self, pet_id: PetId) -> RepoResult<Stock> {
        Ok(self.catalogue.borrow().committed(pet_id))
    }
}

/// Whether `order` passes `query`'s filters (its position aside).
fn matches(query: &OrderQuery, order: &Order) -> bool {
    query
        .pet_id
        .is_none_or(|p| order.lines.iter().any(|l| l.pet_id == p))
        && query.complete.is_none_or(|c| order.complete == c)
        && query.owner.is_none_or(|o| order.owner == Some(o))
}

impl Catalogue {
    /// The units in the pet's open orders.
    pub(super) fn committed(&self, pet_id: PetId) -> Stock {
        let units = self
            .orders
            .values()
            .filter(|o| !o.complete)
            .flat_map(|o| &o.lines)
            .filter(|l| l.pet_id == pet_id)
            .map(|l| l.quantity.get())
            .sum();
        Stock::from_level(units)
    }
}

impl OrderWriter for View<'_, Catalogue> {
    fn insert_order(
        &mut self,
        new: &NewOrder,
        owner: Option<OwnerId>,
        price: Option<Price>,
    ) -> RepoResult<Order> {
        self.insert_checkout(&PlacedCheckout::of_order(new, owner, price))
    }

    fn insert_checkout(&mut self, checkout: &PlacedCheckout) -> RepoResult<Order> {
        let id = next_id(&mut self.catalogue.last_order_id, OrderId::new)?;
        let order = checkout.clone().into_order(id);
        self.catalogue.orders.insert(id, order.clone());
        Ok(order)
    }

    fn update_order(&mut self, order: &Order) -> RepoResult<()> {
        let slot = self
            .catalogue
            .orders
            .get_mut(&order.id)
            .ok_or_else(|| Self::missing("order", order.id))?;
        *slot = order.clone();
        Ok(())
    }

    fn delete_order(&mut self, id: OrderId) -> RepoResult<()> {
        self.catalogue.orders.remove(&id);
        Ok(())
    }
}

//! The orders' use cases. Any caller may shop; a customer sees and cancels only its own
//! orders (another's order does not exist for it), and only staff update orders.

use super::{Service, order_pet, pet_stock, require};
use crate::access::Caller;
use crate::clock::Clock;
use crate::error::{DomainError, Resource};
use crate::events::DomainEvent;
use crate::idempotency::{Idempotent, Outcome};
use crate::ids::OrderId;
use crate::ledger::Entry;
use crate::model::{NewOrder, Order, OrderPatch};
use crate::permission::Permission;
use crate::precondition::Precondition;
use crate::query::{OrderQuery, OrderScope, Page};
use crate::repository::{Snapshot, Store};

/// The use cases of orders; see [`Service::orders`].
#[derive(Debug)]
pub struct OrderUseCases<'a, S, C> {
    pub(super) shop: &'a Service<S, C>,
}

impl<S: Store, C: Clock> OrderUseCases<'_, S, C> {
    /// Places an order for the caller, who owns it: the units leave stock at once, and the
    /// order keeps the price its pet has now (read under the pet's lock, in the same
    /// transaction, so no price change can fall between the two). With `once`, a client
    /// retrying after a lost answer cannot order twice.
    pub fn place(
        &self,
        caller: Caller,
        new: NewOrder,
        once: Option<Idempotent<'_, Order>>,
    ) -> Result<Outcome<Order>, DomainError> {
        caller.require(Permission::Shop)?;
        self.shop.create(caller, once, |tx| {
            let pet = tx
                .pet(new.pet_id)?
                .ok_or(DomainError::UnknownPet { id: new.pet_id })?;
            let transition = pet_stock(tx, &pet)?.place_order(new.quantity)?;
            let order = tx.insert_order(&new, caller.owner(), pet.price)?;
            self.shop
                .apply(tx, &pet, &transition, Entry::line(order.id, 1))?;
            let mut events = vec![DomainEvent::OrderPlaced(order.clone())];
            events.extend(transition.events);
            Ok((order, events))
        })
    }

    /// The order with this id, if the caller may see it.
    pub fn get(&self, caller: Caller, id: OrderId) -> Result<Order, DomainError> {
        caller.require(Permission::Shop)?;
        let scope = caller.order_scope();
        self.shop
            .store
            .read_one(|snapshot| visible_order(snapshot, id, scope))
    }

    /// A page of the orders the caller may see. The query's `owner` is replaced by the
    /// caller's scope, so a caller cannot widen it.
    pub fn list(&self, caller: Caller, query: &OrderQuery) -> Result<Page<Order>, DomainError> {
        caller.require(Permission::Shop)?;
        let query = OrderQuery {
            owner: match caller.order_scope() {
                OrderScope::All => None,
                OrderScope::OwnedBy(owner) => Some(owner),
            },
            ..*query
        };
        let items = self
            .shop
            .store
            .read_one(|snapshot| snapshot.orders(&query))?;
        Ok(Page::from_probe(items, query.limit, |o| o.id.get()))
    }

    /// Changes an order's ship date or completes it (staff), if `condition` holds for it as
    /// it is. Completion is final: asking to make a complete order open again is an invalid
    /// transition.
    pub fn update(
        &self,
        caller: Caller,
        id: OrderId,
        patch: OrderPatch,
        condition: impl Precondition<Order>,
    ) -> Result<Order, DomainError> {
        caller.require(Permission::ManageStore)?;
        self.shop.change(|tx| {
            let current = visible_order(tx, id, OrderScope::All)?;
            require(&condition, &current, Resource::Order)?;
            let completes = match (current.complete, patch.complete) {
                (true, Some(false)) => {
                    return Err(DomainError::InvalidTransition(
                        "a complete order cannot be made open again".into(),
                    ));
                }
                (false, Some(true)) => true,
                _ => false,
            };
            let updated = Order {
                ship_date: patch.ship_date.unwrap_or(current.ship_date),
                complete: current.complete || completes,
                ..current.clone()
            };
            if updated == current {
                return Ok((updated, Vec::new()));
            }
            // The facts are read before the order is saved as complete: the rule expects it
            // still counted among the open orders.
            let completion = if completes {
                let pet = order_pet(tx, &current)?;
                let transition = pet_stock(tx, &pet)?.complete_order(current.quantity);
                Some((pet, transition))
            } else {
                None
            };
            tx.update_order(&updated)?;
            let mut events = Vec::new();
            if updated.ship_date != current.ship_date {
                events.push(DomainEvent::OrderUpdated(updated.clone()));
            }
            if let Some((pet, transition)) = completion {
                self.shop
                    .apply(tx, &pet, &transition, Entry::line(updated.id, 1))?;
                events.push(DomainEvent::OrderCompleted(updated.clone()));
                events.extend(transition.events);
            }
            Ok((updated, events))
        })
    }

    /// Cancels an open order the caller may see, if `condition` holds for it as it is: it is
    /// removed and its units go back in stock.
    pub fn cancel(
        &self,
        caller: Caller,
        id: OrderId,
        condition: impl Precondition<Order>,
    ) -> Result<(), DomainError> {
        caller.require(Permission::Shop)?;
        let scope = caller.order_scope();
        self.shop.change(|tx| {
            let order = visible_order(tx, id, scope)?;
            require(&condition, &order, Resource::Order)?;
            if order.complete {
                return Err(DomainError::OrderNotCancellable { id });
            }
            let pet = order_pet(tx, &order)?;
            let transition = pet_stock(tx, &pet)?.cancel_order(order.quantity);
            tx.delete_order(id)?;
            self.shop.apply(tx, &pet, &transition, Entry::line(id, 1))?;
            let mut events = vec![DomainEvent::OrderCancelled(order)];
            events.extend(transition.events);
            Ok(((), events))
        })
    }
}

/// The order, if it exists and the scope allows seeing it: an order outside the scope is
/// "not found", so order ids of other customers leak nothing.
fn visible_order(
    snapshot: &mut dyn Snapshot,
    id: OrderId,
    scope: OrderScope,
) -> Result<Order, DomainError> {
    snapshot
        .order(id)?
        .filter(|order| scope.allows(order.owner))
        .ok_or_else(|| DomainError::not_found(Resource::Order, id))
}

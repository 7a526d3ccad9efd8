//! The orders' use cases. Any caller may shop; a customer sees and cancels only its own
//! orders (another's order does not exist for it), and only staff update orders.

use chrono::{DateTime, Utc};

use super::stock::{judge_priced_lines, lock_pets};
use super::{Service, order_pets, pet_stock, require};
use crate::access::Caller;
use crate::checkout::{NewCheckout, PlacedCheckout, PricedLine};
use crate::clock::Clock;
use crate::error::{DomainError, Resource};
use crate::events::DomainEvent;
use crate::idempotency::{Idempotent, Outcome};
use crate::ids::{HoldId, OrderId, OwnerId};
use crate::ledger::Entry;
use crate::model::{NewOrder, Order, OrderPatch, Pet};
use crate::money::Total;
use crate::permission::Permission;
use crate::precondition::Precondition;
use crate::query::{OrderQuery, OrderScope, Page};
use crate::repository::{Snapshot, Store, Transaction};
use crate::rules::{PetStock, Transition};

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

    /// Places one order of the checkout's lines for the caller, all or nothing: every pet is
    /// locked, in ascending id, before any line is judged; each line is judged against the
    /// stock the lines before it left; every refused line is named (`CheckoutRefused`); each
    /// line keeps its pet's price, read under that lock, and a checkout whose lines come to
    /// another total than `expected_total` is refused. With `once`, a client retrying after
    /// a lost answer cannot check out twice. A checkout of more than one line waits for the
    /// stock ledger to have begun (`UpgradeUnfinished`): until then a node of the older
    /// version may serve, and would read the order as its first line.
    pub fn checkout(
        &self,
        caller: Caller,
        checkout: NewCheckout,
        once: Option<Idempotent<'_, Order>>,
    ) -> Result<Outcome<Order>, DomainError> {
        caller.require(Permission::Shop)?;
        #[cfg(feature = "plant-price-outside-tx")]
        let early = super::plant::prices_before(self.shop, &checkout)?;
        self.shop.create(caller, once, |tx| {
            let lines = checkout.lines.lines();
            #[cfg(not(feature = "plant-lines-separately"))]
            if let Some((line_no, pet_id)) = checkout.lines.repeated() {
                return Err(DomainError::PetRepeated { pet_id, line_no });
            }
            if lines.len() > 1 && !tx.ledger_open()? {
                return Err(DomainError::UpgradeUnfinished);
            }
            let mut pets = lock_pets(tx, lines.iter().map(|line| line.pet_id))?;
            #[cfg(feature = "plant-price-outside-tx")]
            for (id, (pet, _)) in pets.iter_mut() {
                pet.price = early.get(id).copied().flatten();
            }
            let placed = judge_priced_lines(&mut pets, lines, PetStock::place_order)?;
            let terms = Terms {
                ship_date: checkout.ship_date,
                expected_total: checkout.expected_total,
                owner: caller.owner(),
                hold: None,
            };
            self.shop.place_lines(tx, &placed, terms)
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
        let query = scoped(caller, query)?;
        // A read of its own, not a single statement: an order of several lines is read with
        // its lines, in the same snapshot.
        let items = self.shop.store.read(|snapshot| snapshot.orders(&query))?;
        Ok(Page::from_probe(items, query.limit, |o| o.id.get()))
    }

    /// How many orders the caller may see match the query after its `after` (its `limit`
    /// aside): with no `after`, how many a list of these filters holds in all.
    pub fn count(&self, caller: Caller, query: &OrderQuery) -> Result<u64, DomainError> {
        let query = scoped(caller, query)?;
        self.shop
            .store
            .read_one(|snapshot| snapshot.order_count(&query))
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
            // still counted among the open orders. Every line completes.
            let completions = if completes {
                order_pets(tx, &current)?
                    .into_iter()
                    .map(|(line, pet, facts)| {
                        let transition = facts.complete_order(line.quantity);
                        (line, pet, transition)
                    })
                    .collect()
            } else {
                Vec::new()
            };
            tx.update_order(&updated)?;
            let mut events = Vec::new();
            if updated.ship_date != current.ship_date {
                events.push(DomainEvent::OrderUpdated(updated.clone()));
            }
            if completes {
                events.push(DomainEvent::OrderCompleted(updated.clone()));
            }
            for (line, pet, transition) in completions {
                let entry = Entry::line(updated.id, u32::from(line.line_no));
                self.shop.apply(tx, &pet, &transition, entry)?;
                events.extend(transition.events);
            }
            Ok((updated, events))
        })
    }

    /// Cancels an open order the caller may see, if `condition` holds for it as it is: it is
    /// removed and the units of every line go back in stock.
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
            let releases: Vec<_> = order_pets(tx, &order)?
                .into_iter()
                .map(|(line, pet, facts)| {
                    let transition = facts.cancel_order(line.quantity);
                    (line, pet, transition)
                })
                .collect();
            tx.delete_order(id)?;
            let mut events = vec![DomainEvent::OrderCancelled(order)];
            for (line, pet, transition) in releases {
                let entry = Entry::line(id, u32::from(line.line_no));
                self.shop.apply(tx, &pet, &transition, entry)?;
                events.extend(transition.events);
            }
            Ok(((), events))
        })
    }
}

/// What an order of judged lines is placed under, besides its lines.
pub(super) struct Terms {
    /// When it is to ship, if known.
    pub ship_date: Option<DateTime<Utc>>,
    /// The total the client expects; another refuses the order.
    pub expected_total: Option<Total>,
    /// Who places it.
    pub owner: Option<OwnerId>,
    /// The hold whose units it orders, if any.
    pub hold: Option<HoldId>,
}

impl<S: Store, C: Clock> Service<S, C> {
    /// Places one order of `placed` lines (each priced, with its pet and the transition a
    /// rule decided for it, in line order) under `terms`: refused when the lines come to
    /// another total than the client expects; else the order with a price per line, each
    /// line's ledger movement, and the events, `order.placed` first.
    pub(super) fn place_lines(
        &self,
        tx: &mut dyn Transaction,
        placed: &[(PricedLine, Pet, Transition)],
        terms: Terms,
    ) -> Result<(Order, Vec<DomainEvent>), DomainError> {
        let total = Total::sum_known(placed.iter().map(|(line, _, _)| line.amount()))
            .ok_or_else(|| DomainError::storage("a checkout's total is out of bounds"))?;
        if let Some(expected) = terms.expected_total.filter(|&e| e != total) {
            return Err(DomainError::TotalMismatch { expected, total });
        }
        let mut priced = placed.iter().map(|(line, _, _)| *line);
        let first = priced
            .next()
            .ok_or_else(|| DomainError::storage("a checkout without lines"))?;
        let order = tx.insert_checkout(&PlacedCheckout {
            first,
            more: priced.collect(),
            ship_date: terms.ship_date,
            owner: terms.owner,
        })?;
        let changes = placed
            .iter()
            .zip(1u16..)
            .map(|((_, pet, transition), line_no)| {
                let entry = Entry::line(order.id, u32::from(line_no)).of_hold(terms.hold);
                (pet, transition, entry)
            });
        self.apply_all(tx, changes)?;
        let mut events = vec![DomainEvent::OrderPlaced(order.clone())];
        for (_, _, transition) in placed {
            events.extend(transition.events.iter().cloned());
        }
        Ok((order, events))
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

/// The query as `caller` may ask it: its `owner` replaced by the caller's scope, so that a
/// caller cannot widen it.
fn scoped(caller: Caller, query: &OrderQuery) -> Result<OrderQuery, DomainError> {
    caller.require(Permission::Shop)?;
    Ok(OrderQuery {
        owner: match caller.order_scope() {
            OrderScope::All => None,
            OrderScope::OwnedBy(owner) => Some(owner),
        },
        ..*query
    })
}

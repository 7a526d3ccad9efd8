//! The pet status state machine and the order and stock rules, as pure functions.
//!
//! Each rule takes the facts about one pet ([`PetStock`]) and returns the facts after the
//! change, the events the change causes and the movement of the stock ledger it makes
//! ([`Transition`]). Nothing here reads or writes a store; [`Service`](crate::Service) loads
//! the facts, applies a rule and saves the result.
//!
//! | event                         | precondition                       | stock      | status afterwards |
//! |-------------------------------|------------------------------------|------------|-------------------|
//! | place an order of `q` units   | stock ≥ `q`, then `available`      | − `q`      | `pending` if stock reached 0, else unchanged |
//! | complete an open order        | —                                  | unchanged  | `sold` if stock is 0 and no other open order, else unchanged |
//! | cancel an open order of `q`   | the order is not complete          | + `q`      | `pending` → `available`, else unchanged |
//! | set stock to `n > 0`          | —                                  | = `n`      | `pending`/`sold` → `available` |
//! | set stock to 0                | —                                  | = 0        | `available` → `pending` if open orders, else `sold` |
//! | adjust stock by `d`           | stock + `d` from 0 to 1,000,000    | + `d`      | as setting stock to the result |
//! | hold `q` units                | as placing an order                | − `q`      | as placing an order |
//! | release or expire a hold of `q` | —                                | + `q`      | as cancelling an order |
//! | check out a hold of `q`       | —                                  | unchanged  | unchanged |
//! | staff sets status `s`         | —                                  | unchanged  | = `s` |
//!
//! Units in open orders (`committed`) grow by an order's units when it is placed and shrink
//! by them when it is completed or cancelled; units in active holds (`held`) grow when a hold
//! is placed and shrink when it ends, into `committed` when it is checked out. Held units
//! count as an open order does for the status: no stock with units held is `pending`, not
//! `sold`. The ledger's kinds are `ledger.rs`'s table.

use crate::error::DomainError;
use crate::events::DomainEvent;
use crate::ids::PetId;
use crate::ledger::{AdjustmentUnits, MovementKind, StockChange};
use crate::model::{InventoryItem, PetStatus};
use crate::validation::ValidationError;
use crate::values::{Quantity, Stock};

/// The facts about one pet that the rules look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PetStock {
    /// The pet.
    pub pet_id: PetId,
    /// Its status.
    pub status: PetStatus,
    /// Units in stock.
    pub stock: Stock,
    /// Its orders that are neither complete nor cancelled.
    pub open_orders: u64,
    /// The units those orders hold.
    pub committed: Stock,
    /// The units its active holds set aside.
    pub held: Stock,
}

/// The result of a rule: the facts afterwards and the events to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    /// The facts before the change.
    pub before: PetStock,
    /// The facts after the change.
    pub after: PetStock,
    /// `inventory.updated` when the stock level changed, `pet.status_changed` when the
    /// status changed; nothing when nothing changed.
    pub events: Vec<DomainEvent>,
    /// How the change moved the stock, for the ledger; `None` when it moved nothing.
    pub change: Option<StockChange>,
}

impl PetStock {
    /// Places an order of `quantity` units: the pet must have the units and be `available`.
    /// Taking the last unit makes it `pending`.
    ///
    /// When both checks fail, stock is reported: a client that lost the race for the last
    /// unit learns "sold out" (`insufficient_stock`), not that a rival's order made the pet
    /// `pending`. `pet_not_available` means units exist but staff took the pet off sale.
    pub fn place_order(self, quantity: Quantity) -> Result<Transition, DomainError> {
        let (status, stock) = self.take(quantity)?;
        Ok(self.becomes(
            PetStock {
                status,
                stock,
                open_orders: self.open_orders + 1,
                committed: self.committed.put_back(quantity),
                ..self
            },
            MovementKind::Committed,
        ))
    }

    /// Sets `quantity` units aside for a hold: they must be there to order (as for
    /// [`place_order`](Self::place_order)), and leave `available` for `held`.
    pub fn hold(self, quantity: Quantity) -> Result<Transition, DomainError> {
        let (status, stock) = self.take(quantity)?;
        Ok(self.becomes(
            PetStock {
                status,
                stock,
                held: self.held.put_back(quantity),
                ..self
            },
            MovementKind::Held,
        ))
    }

    /// A hold of `quantity` units ends without an order (`kind`: released or expired): the
    /// units go back in stock, and a `pending` pet is `available` again.
    pub fn end_hold(self, quantity: Quantity, kind: MovementKind) -> Transition {
        self.becomes(
            PetStock {
                status: back_on_sale(self.status),
                stock: self.stock.put_back(quantity),
                held: self.held.take(quantity).unwrap_or(Stock::ZERO),
                ..self
            },
            kind,
        )
    }

    /// A hold of `quantity` units is checked out: they become an open order's, and stock
    /// and status stay as they are.
    pub fn commit_hold(self, quantity: Quantity) -> Transition {
        self.becomes(
            PetStock {
                open_orders: self.open_orders + 1,
                held: self.held.take(quantity).unwrap_or(Stock::ZERO),
                committed: self.committed.put_back(quantity),
                ..self
            },
            MovementKind::HoldCommitted,
        )
    }

    /// The status and stock after taking `quantity` units for an order or a hold, if the
    /// pet has them and is `available`.
    fn take(self, quantity: Quantity) -> Result<(PetStatus, Stock), DomainError> {
        let stock = self
            .stock
            .take(quantity)
            .ok_or(DomainError::InsufficientStock {
                pet_id: self.pet_id,
                requested: quantity.get(),
                available: self.stock.get(),
            })?;
        if self.status != PetStatus::Available {
            return Err(DomainError::PetNotAvailable {
                id: self.pet_id,
                status: self.status,
            });
        }
        let status = if stock.is_empty() {
            PetStatus::Pending
        } else {
            self.status
        };
        Ok((status, stock))
    }

    /// Completes one of the pet's open orders (counted in `open_orders`), of `quantity`
    /// units: they leave the shop. When no stock, no other open order and no held unit is
    /// left, the pet is `sold`.
    pub fn complete_order(self, quantity: Quantity) -> Transition {
        let open_orders = self.open_orders.saturating_sub(1);
        let status = if self.stock.is_empty() && open_orders == 0 && self.held.is_empty() {
            PetStatus::Sold
        } else {
            self.status
        };
        self.becomes(
            PetStock {
                status,
                open_orders,
                committed: self.committed.take(quantity).unwrap_or(Stock::ZERO),
                ..self
            },
            MovementKind::Sold,
        )
    }

    /// Cancels one of the pet's open orders of `quantity` units: the units go back in stock
    /// and a `pending` pet is `available` again.
    pub fn cancel_order(self, quantity: Quantity) -> Transition {
        self.becomes(
            PetStock {
                status: back_on_sale(self.status),
                stock: self.stock.put_back(quantity),
                open_orders: self.open_orders.saturating_sub(1),
                committed: self.committed.take(quantity).unwrap_or(Stock::ZERO),
                ..self
            },
            MovementKind::Released,
        )
    }

    /// Sets the stock level. Stock makes a `pending` or `sold` pet `available`; no stock makes
    /// an `available` pet `pending` while orders are open or units held, `sold` otherwise.
    pub fn set_stock(self, stock: Stock) -> Transition {
        self.restock(stock, MovementKind::Set)
    }

    /// Adjusts the stock by `units` (in, or out when negative), as setting it to the result
    /// would: the result must be from 0 to [`Stock::MAX_SETTABLE`]. Taking out more units than
    /// are in stock is `insufficient_stock`.
    pub fn adjust(self, units: AdjustmentUnits) -> Result<Transition, DomainError> {
        let level = i64::from(self.stock.get()) + i64::from(units.get());
        if level < 0 {
            return Err(DomainError::InsufficientStock {
                pet_id: self.pet_id,
                requested: units.get().unsigned_abs(),
                available: self.stock.get(),
            });
        }
        let stock = Stock::settable(level).map_err(|_| {
            ValidationError::new("change", "would lift the stock above 1000000 units")
        })?;
        Ok(self.restock(stock, MovementKind::Adjusted))
    }

    /// The pet is deleted: the units left in stock are written off. It has no open order and
    /// no active hold (either keeps it from being deleted).
    pub fn write_off(self) -> Transition {
        let change = (!self.stock.is_empty())
            .then(|| StockChange::of(MovementKind::WrittenOff, self.stock.get()));
        Transition {
            before: self,
            after: PetStock {
                stock: Stock::ZERO,
                ..self
            },
            events: Vec::new(),
            change,
        }
    }

    /// Staff set the status by hand; stock and orders are untouched.
    pub fn set_status(self, status: PetStatus) -> Transition {
        self.becomes(PetStock { status, ..self }, MovementKind::Set)
    }

    /// The stock is set to `stock`, by a `set` or an `adjusted` movement.
    fn restock(self, stock: Stock, kind: MovementKind) -> Transition {
        let status = match (stock.is_empty(), self.status) {
            (false, PetStatus::Pending | PetStatus::Sold) => PetStatus::Available,
            (true, PetStatus::Available) if self.open_orders > 0 || !self.held.is_empty() => {
                PetStatus::Pending
            }
            (true, PetStatus::Available) => PetStatus::Sold,
            (_, unchanged) => unchanged,
        };
        self.becomes(
            PetStock {
                status,
                stock,
                ..self
            },
            kind,
        )
    }

    /// The pet's inventory entry as these facts describe it.
    pub fn inventory_item(self) -> InventoryItem {
        InventoryItem {
            pet_id: self.pet_id,
            quantity: self.stock,
            status: self.status,
            held: self.held,
            committed: self.committed,
        }
    }

    /// The transition to `after`, a movement of `kind` if any units moved.
    fn becomes(self, after: PetStock, kind: MovementKind) -> Transition {
        let moved = |get: fn(&PetStock) -> Stock| get(&self).get().abs_diff(get(&after).get());
        let units = moved(|p| p.stock)
            .max(moved(|p| p.held))
            .max(moved(|p| p.committed));
        let change = match kind {
            _ if units == 0 => None,
            MovementKind::Set | MovementKind::Adjusted => {
                Some(StockChange::between(kind, self.stock, after.stock))
            }
            _ => Some(StockChange::of(kind, units)),
        };
        let mut events = Vec::new();
        if after.status != self.status {
            events.push(DomainEvent::PetStatusChanged {
                pet_id: self.pet_id,
                from: self.status,
                to: after.status,
            });
        }
        // What a shopper can order, or what is set aside, changed; committed units move
        // with orders, whose own events say so.
        if after.stock != self.stock || after.held != self.held {
            events.push(DomainEvent::InventoryUpdated(after.inventory_item()));
        }
        Transition {
            before: self,
            after,
            events,
            change,
        }
    }
}

/// A `pending` pet whose units come back is `available` again; `sold` and `available` stay.
fn back_on_sale(status: PetStatus) -> PetStatus {
    match status {
        PetStatus::Pending => PetStatus::Available,
        other => other,
    }
}

#[cfg(test)]
mod tests;

//! The pet status state machine and the order and stock rules, as pure functions.
//!
//! Each rule takes the facts about one pet ([`PetStock`]) and returns the facts after the
//! change plus the events the change causes ([`Transition`]). Nothing here reads or writes
//! a store; [`Service`](crate::Service) loads the facts, applies a rule and saves the result.
//!
//! | event                         | precondition                       | stock      | status afterwards |
//! |-------------------------------|------------------------------------|------------|-------------------|
//! | place an order of `q` units   | stock ≥ `q`, then `available`      | − `q`      | `pending` if stock reached 0, else unchanged |
//! | complete an open order        | —                                  | unchanged  | `sold` if stock is 0 and no other open order, else unchanged |
//! | cancel an open order of `q`   | the order is not complete          | + `q`      | `pending` → `available`, else unchanged |
//! | set stock to `n > 0`          | —                                  | = `n`      | `pending`/`sold` → `available` |
//! | set stock to 0                | —                                  | = 0        | `available` → `pending` if open orders, else `sold` |
//! | staff sets status `s`         | —                                  | unchanged  | = `s` |

use crate::error::DomainError;
use crate::events::DomainEvent;
use crate::ids::PetId;
use crate::model::{InventoryItem, PetStatus};
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
}

impl PetStock {
    /// Places an order of `quantity` units: the pet must have the units and be `available`.
    /// Taking the last unit makes it `pending`.
    ///
    /// When both checks fail, stock is reported: a client that lost the race for the last
    /// unit learns "sold out" (`insufficient_stock`), not that a rival's order made the pet
    /// `pending`. `pet_not_available` means units exist but staff took the pet off sale.
    pub fn place_order(self, quantity: Quantity) -> Result<Transition, DomainError> {
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
        Ok(self.becomes(PetStock {
            status,
            stock,
            open_orders: self.open_orders + 1,
            ..self
        }))
    }

    /// Completes one of the pet's open orders (counted in `open_orders`). When no stock and
    /// no other open order is left, the pet is `sold`.
    pub fn complete_order(self) -> Transition {
        let open_orders = self.open_orders.saturating_sub(1);
        let status = if self.stock.is_empty() && open_orders == 0 {
            PetStatus::Sold
        } else {
            self.status
        };
        self.becomes(PetStock {
            status,
            open_orders,
            ..self
        })
    }

    /// Cancels one of the pet's open orders of `quantity` units: the units go back in stock
    /// and a `pending` pet is `available` again.
    pub fn cancel_order(self, quantity: Quantity) -> Transition {
        let status = match self.status {
            PetStatus::Pending => PetStatus::Available,
            other => other,
        };
        self.becomes(PetStock {
            status,
            stock: self.stock.put_back(quantity),
            open_orders: self.open_orders.saturating_sub(1),
            ..self
        })
    }

    /// Sets the stock level. Stock makes a `pending` or `sold` pet `available`; no stock makes
    /// an `available` pet `pending` while orders are open, `sold` otherwise.
    pub fn set_stock(self, stock: Stock) -> Transition {
        let status = match (stock.is_empty(), self.status) {
            (false, PetStatus::Pending | PetStatus::Sold) => PetStatus::Available,
            (true, PetStatus::Available) if self.open_orders > 0 => PetStatus::Pending,
            (true, PetStatus::Available) => PetStatus::Sold,
            (_, unchanged) => unchanged,
        };
        self.becomes(PetStock {
            status,
            stock,
            ..self
        })
    }

    /// Staff set the status by hand; stock and orders are untouched.
    pub fn set_status(self, status: PetStatus) -> Transition {
        self.becomes(PetStock { status, ..self })
    }

    /// The pet's inventory entry as these facts describe it.
    pub fn inventory_item(self) -> InventoryItem {
        InventoryItem {
            pet_id: self.pet_id,
            quantity: self.stock,
            status: self.status,
        }
    }

    fn becomes(self, after: PetStock) -> Transition {
        let mut events = Vec::new();
        if after.status != self.status {
            events.push(DomainEvent::PetStatusChanged {
                pet_id: self.pet_id,
                from: self.status,
                to: after.status,
            });
        }
        if after.stock != self.stock {
            events.push(DomainEvent::InventoryUpdated(after.inventory_item()));
        }
        Transition {
            before: self,
            after,
            events,
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn pet(status: PetStatus, stock: u32, open_orders: u64) -> PetStock {
        PetStock {
            pet_id: PetId::new(1).unwrap(),
            status,
            stock: Stock::from_level(stock),
            open_orders,
        }
    }

    fn qty(n: i64) -> Quantity {
        Quantity::new(n).unwrap()
    }

    #[test]
    fn an_order_takes_units_out_of_stock_at_once() {
        let t = pet(PetStatus::Available, 5, 0).place_order(qty(2)).unwrap();
        assert_eq!(t.after, pet(PetStatus::Available, 3, 1));
        assert_eq!(
            t.events,
            vec![DomainEvent::InventoryUpdated(t.after.inventory_item())]
        );
    }

    #[test]
    fn taking_the_last_unit_makes_the_pet_pending() {
        let t = pet(PetStatus::Available, 2, 0).place_order(qty(2)).unwrap();
        assert_eq!(t.after, pet(PetStatus::Pending, 0, 1));
        assert!(t.events.contains(&DomainEvent::PetStatusChanged {
            pet_id: PetId::new(1).unwrap(),
            from: PetStatus::Available,
            to: PetStatus::Pending,
        }));
    }

    #[test]
    fn only_available_pets_can_be_ordered() {
        for status in [PetStatus::Pending, PetStatus::Sold] {
            let err = pet(status, 10, 0).place_order(qty(1)).unwrap_err();
            assert_eq!(err.code(), "pet_not_available");
        }
    }

    #[test]
    fn a_sold_out_pet_reports_stock_before_status() {
        for status in PetStatus::ALL {
            let err = pet(status, 0, 1).place_order(qty(1)).unwrap_err();
            assert_eq!(err.code(), "insufficient_stock");
        }
    }

    #[test]
    fn an_order_cannot_take_more_than_the_stock() {
        let err = pet(PetStatus::Available, 2, 0)
            .place_order(qty(3))
            .unwrap_err();
        assert_eq!(
            err,
            DomainError::InsufficientStock {
                pet_id: PetId::new(1).unwrap(),
                requested: 3,
                available: 2
            }
        );
    }

    #[test]
    fn completing_the_last_open_order_without_stock_sells_the_pet() {
        let t = pet(PetStatus::Pending, 0, 1).complete_order();
        assert_eq!(t.after, pet(PetStatus::Sold, 0, 0));
    }

    #[test]
    fn completing_while_other_orders_are_open_keeps_the_pet_pending() {
        let t = pet(PetStatus::Pending, 0, 2).complete_order();
        assert_eq!(t.after, pet(PetStatus::Pending, 0, 1));
        assert!(t.events.is_empty());
    }

    #[test]
    fn completing_while_stock_remains_changes_no_status() {
        let t = pet(PetStatus::Available, 3, 1).complete_order();
        assert_eq!(t.after, pet(PetStatus::Available, 3, 0));
        assert!(t.events.is_empty());
    }

    #[test]
    fn cancelling_puts_units_back_and_frees_a_pending_pet() {
        let t = pet(PetStatus::Pending, 0, 1).cancel_order(qty(4));
        assert_eq!(t.after, pet(PetStatus::Available, 4, 0));
        assert_eq!(t.events.len(), 2);
    }

    #[test]
    fn cancelling_leaves_a_status_staff_set_by_hand() {
        let t = pet(PetStatus::Sold, 0, 1).cancel_order(qty(1));
        assert_eq!(t.after, pet(PetStatus::Sold, 1, 0));
    }

    #[test]
    fn stock_makes_pending_and_sold_pets_available() {
        for status in [PetStatus::Pending, PetStatus::Sold, PetStatus::Available] {
            let t = pet(status, 0, 1).set_stock(Stock::from_level(5));
            assert_eq!(t.after, pet(PetStatus::Available, 5, 1));
        }
    }

    #[test]
    fn no_stock_makes_an_available_pet_pending_or_sold() {
        assert_eq!(
            pet(PetStatus::Available, 5, 2).set_stock(Stock::ZERO).after,
            pet(PetStatus::Pending, 0, 2)
        );
        assert_eq!(
            pet(PetStatus::Available, 5, 0).set_stock(Stock::ZERO).after,
            pet(PetStatus::Sold, 0, 0)
        );
        assert_eq!(
            pet(PetStatus::Pending, 5, 1).set_stock(Stock::ZERO).after,
            pet(PetStatus::Pending, 0, 1)
        );
    }

    #[test]
    fn setting_the_same_level_records_nothing() {
        assert!(
            pet(PetStatus::Available, 5, 0)
                .set_stock(Stock::from_level(5))
                .events
                .is_empty()
        );
    }

    #[test]
    fn staff_may_set_any_status_and_it_is_recorded() {
        let t = pet(PetStatus::Available, 5, 0).set_status(PetStatus::Sold);
        assert_eq!(t.after, pet(PetStatus::Sold, 5, 0));
        assert_eq!(t.events.len(), 1);
    }

    fn any_status() -> impl Strategy<Value = PetStatus> {
        prop::sample::select(PetStatus::ALL.to_vec())
    }

    proptest! {
        #[test]
        fn placing_then_cancelling_restores_stock_and_availability(
            stock in 1u32..=2000, q in 1i64..=1000, open in 0u64..5
        ) {
            let before = pet(PetStatus::Available, stock, open);
            if let Ok(placed) = before.place_order(qty(q)) {
                prop_assert_eq!(placed.after.stock.get() + q as u32, stock);
                let back = placed.after.cancel_order(qty(q)).after;
                prop_assert_eq!(back, before);
            } else {
                prop_assert!(i64::from(stock) < q);
            }
        }

        #[test]
        fn events_describe_exactly_what_changed(
            status in any_status(), stock in 0u32..10, open in 0u64..3, level in 0u32..10
        ) {
            let before = pet(status, stock, open);
            let t = before.set_stock(Stock::from_level(level));
            let status_events = t.events.iter().filter(|e| matches!(e, DomainEvent::PetStatusChanged { .. })).count();
            let stock_events = t.events.iter().filter(|e| matches!(e, DomainEvent::InventoryUpdated(_))).count();
            prop_assert_eq!(status_events, usize::from(t.after.status != before.status));
            prop_assert_eq!(stock_events, usize::from(t.after.stock != before.stock));
        }

        #[test]
        fn no_rule_touches_stock_except_orders_and_stock_updates(
            status in any_status(), stock in 0u32..10, open in 1u64..3, to in any_status()
        ) {
            let before = pet(status, stock, open);
            prop_assert_eq!(before.complete_order().after.stock, before.stock);
            prop_assert_eq!(before.set_status(to).after.stock, before.stock);
        }
    }
}

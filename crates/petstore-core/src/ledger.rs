//! The stock ledger: every change of a pet's stock is a movement, written in the transaction
//! that makes the change, so that a pet's stock is always the sum of its movements and its
//! history can be read (and repaired from) at any time.
//!
//! A pet has three balances: `available`, the units that can be ordered (the inventory's
//! `quantity`); `held`, the units set aside by its active holds; and `committed`, the units
//! in its open orders. Each kind of movement moves them in its own way:
//!
//! | kind             | caused by                                 | available | held | committed |
//! |------------------|-------------------------------------------|-----------|------|-----------|
//! | `opening`        | the ledger beginning (`migrate --finish`) | + a       | 0    | + c       |
//! | `set`            | a stock level set (`PATCH /v1/inventory`) | ± d       | 0    | 0         |
//! | `adjusted`       | an adjustment with a reason               | ± d       | 0    | 0         |
//! | `committed`      | an order placed                           | − q       | 0    | + q       |
//! | `released`       | an open order cancelled                   | + q       | 0    | − q       |
//! | `sold`           | an open order completed                   | 0         | 0    | − q       |
//! | `written_off`    | a pet deleted with units left             | − a       | 0    | 0         |
//! | `held`           | a hold placed                             | − q       | + q  | 0         |
//! | `hold_released`  | a hold released by its owner or staff     | + q       | − q  | 0         |
//! | `hold_expired`   | a hold ended by its expiry                | + q       | − q  | 0         |
//! | `hold_committed` | a hold checked out: its units are ordered | 0         | − q  | + q       |
//!
//! `quantity` is the units moved (`a`, `|d|` or `q`), never negative.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::actor::{Actor, RequestId};
use crate::ids::{HoldId, MovementId, OrderId, PetId};
use crate::validation::ValidationError;
use crate::values::{PageSize, Quantity, Stock};

mod adjustment;

pub use adjustment::{Adjustment, AdjustmentUnits, Reason};

/// What moved a pet's stock; see the module's table.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MovementKind {
    /// The balances the pet had when its ledger began.
    Opening,
    /// Staff set the stock level.
    Set,
    /// Staff adjusted the stock by a number of units, giving a reason.
    Adjusted,
    /// An order took units: they leave `available` for `committed`.
    Committed,
    /// An open order was cancelled: its units go back.
    Released,
    /// An open order was completed: its units leave the shop.
    Sold,
    /// The pet was deleted with units in stock.
    WrittenOff,
    /// A hold set units aside: they leave `available` for `held`.
    Held,
    /// A hold was released by its owner or staff: its units go back.
    HoldReleased,
    /// A hold ended at its expiry: its units go back.
    HoldExpired,
    /// A hold was checked out: its units leave `held` for `committed`.
    HoldCommitted,
}

impl MovementKind {
    /// Every kind.
    pub const ALL: [MovementKind; 11] = [
        MovementKind::Opening,
        MovementKind::Set,
        MovementKind::Adjusted,
        MovementKind::Committed,
        MovementKind::Released,
        MovementKind::Sold,
        MovementKind::WrittenOff,
        MovementKind::Held,
        MovementKind::HoldReleased,
        MovementKind::HoldExpired,
        MovementKind::HoldCommitted,
    ];

    /// Its name, as the API and the stores write it.
    pub const fn as_str(self) -> &'static str {
        match self {
            MovementKind::Opening => "opening",
            MovementKind::Set => "set",
            MovementKind::Adjusted => "adjusted",
            MovementKind::Committed => "committed",
            MovementKind::Released => "released",
            MovementKind::Sold => "sold",
            MovementKind::WrittenOff => "written_off",
            MovementKind::Held => "held",
            MovementKind::HoldReleased => "hold_released",
            MovementKind::HoldExpired => "hold_expired",
            MovementKind::HoldCommitted => "hold_committed",
        }
    }

    /// How `q` units moved by this kind move the balances `(available, held, committed)`,
    /// where the module's table fixes it (`set` and `adjusted` move `available` either way).
    const fn moves(self, q: i64) -> (i64, i64, i64) {
        match self {
            MovementKind::Opening | MovementKind::Set | MovementKind::Adjusted => (q, 0, 0),
            MovementKind::Committed => (-q, 0, q),
            MovementKind::Released => (q, 0, -q),
            MovementKind::Sold => (0, 0, -q),
            MovementKind::WrittenOff => (-q, 0, 0),
            MovementKind::Held => (-q, q, 0),
            MovementKind::HoldReleased | MovementKind::HoldExpired => (q, -q, 0),
            MovementKind::HoldCommitted => (0, -q, q),
        }
    }
}

impl fmt::Display for MovementKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for MovementKind {
    type Err = ValidationError;

    fn from_str(text: &str) -> Result<Self, ValidationError> {
        MovementKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == text)
            .ok_or_else(|| ValidationError::new("kind", "is not a kind of stock movement"))
    }
}

/// How one change moves a pet's balances: what a stock rule decides
/// ([`Transition::change`](crate::Transition::change)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StockChange {
    /// Why the stock moved.
    pub kind: MovementKind,
    /// The units moved.
    pub quantity: u32,
    /// How `available` moved.
    pub available: i64,
    /// How `held` moved.
    pub held: i64,
    /// How `committed` moved.
    pub committed: i64,
}

impl StockChange {
    /// Whether the changes fit the kind and its units (the module's table). An opening's
    /// changes are its balances, which no change can make negative.
    pub fn fits(&self) -> bool {
        let q = i64::from(self.quantity);
        match self.kind {
            MovementKind::Opening => self.available == q && self.held == 0 && self.committed >= 0,
            MovementKind::Set | MovementKind::Adjusted => {
                self.held == 0
                    && self.committed == 0
                    && self.available.unsigned_abs() == u64::from(self.quantity)
            }
            kind => (self.available, self.held, self.committed) == kind.moves(q),
        }
    }

    /// Stock set from `before` to `after` units (`set`), or adjusted so (`adjusted`).
    pub fn between(kind: MovementKind, before: Stock, after: Stock) -> Self {
        let available = i64::from(after.get()) - i64::from(before.get());
        Self {
            kind,
            quantity: before.get().abs_diff(after.get()),
            available,
            held: 0,
            committed: 0,
        }
    }

    /// `quantity` units moved as a kind moving units between the two balances (or out of
    /// them) moves them: every kind but `opening`, `set` and `adjusted`.
    pub fn of(kind: MovementKind, quantity: u32) -> Self {
        let (available, held, committed) = kind.moves(i64::from(quantity));
        Self {
            kind,
            quantity,
            available,
            held,
            committed,
        }
    }

    /// An order's `quantity`: see [`StockChange::of`].
    pub fn of_order(kind: MovementKind, quantity: Quantity) -> Self {
        Self::of(kind, quantity.get())
    }
}

/// What a movement belongs to besides its pet: the order line that moved it, the hold and
/// its line, or the reason staff gave.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entry {
    /// The order, and the number of its line, whose units moved.
    pub order_line: Option<(OrderId, u32)>,
    /// The hold whose units moved (and, with `order_line`, became that order's).
    pub hold: Option<HoldId>,
    /// Why staff moved the units.
    pub reason: Option<Reason>,
}

impl Entry {
    /// A movement of an order's line.
    pub fn line(order: OrderId, line_no: u32) -> Self {
        Self {
            order_line: Some((order, line_no)),
            ..Self::default()
        }
    }

    /// A movement of a hold's units (its line numbers are the hold's own; a checkout of the
    /// hold gives its lines the same numbers in the order).
    pub fn hold(hold: HoldId) -> Self {
        Self {
            hold: Some(hold),
            ..Self::default()
        }
    }

    /// A movement staff gave `reason` for.
    pub fn because(reason: Reason) -> Self {
        Self {
            reason: Some(reason),
            ..Self::default()
        }
    }

    /// The same entry, of `hold` too.
    #[must_use]
    pub fn of_hold(self, hold: Option<HoldId>) -> Self {
        Self { hold, ..self }
    }
}

/// The three balances of a pet's stock (the module's table), as a movement leaves them.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Balances {
    /// Units that can be ordered.
    #[cfg_attr(feature = "openapi", schema(value_type = u32))]
    pub available: Stock,
    /// Units set aside by active holds.
    #[cfg_attr(feature = "openapi", schema(value_type = u32))]
    pub held: Stock,
    /// Units in open orders.
    #[cfg_attr(feature = "openapi", schema(value_type = u32))]
    pub committed: Stock,
}

/// A movement as a use case hands it to the store: the change, the balances after it, and
/// what it belongs to. The store adds its id, time and cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMovement {
    /// The pet whose stock moved.
    pub pet_id: PetId,
    /// How it moved.
    pub change: StockChange,
    /// The balances after the movement.
    pub after: Balances,
    /// What it belongs to.
    pub entry: Entry,
}

/// A recorded stock movement: one row of a pet's ledger.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Movement {
    /// Its id: movements are numbered in the order they were recorded.
    pub id: MovementId,
    /// The pet whose stock moved.
    pub pet_id: PetId,
    /// Why it moved.
    pub kind: MovementKind,
    /// The units moved.
    pub quantity: u32,
    /// How many units `available` moved (negative: out).
    pub available_change: i64,
    /// How many units `held` moved (negative: out).
    pub held_change: i64,
    /// How many units `committed` moved (negative: out).
    pub committed_change: i64,
    /// Units available after the movement.
    #[cfg_attr(feature = "openapi", schema(value_type = u32))]
    pub available_after: Stock,
    /// Units held after the movement.
    #[cfg_attr(feature = "openapi", schema(value_type = u32))]
    pub held_after: Stock,
    /// Units in open orders after the movement.
    #[cfg_attr(feature = "openapi", schema(value_type = u32))]
    pub committed_after: Stock,
    /// The order whose units moved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_id: Option<OrderId>,
    /// The number of the order's line whose units moved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_no: Option<u32>,
    /// The hold whose units moved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hold_id: Option<HoldId>,
    /// Why staff moved the units.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub reason: Option<Reason>,
    /// Who caused it, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor: Option<Actor>,
    /// The `X-Request-Id` of the request that caused it, when it came through one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub request_id: Option<RequestId>,
    /// When it was recorded.
    pub time: DateTime<Utc>,
}

impl Movement {
    /// How it moved the balances.
    pub fn change(&self) -> StockChange {
        StockChange {
            kind: self.kind,
            quantity: self.quantity,
            available: self.available_change,
            held: self.held_change,
            committed: self.committed_change,
        }
    }

    /// The balances it left.
    pub fn after(&self) -> Balances {
        Balances {
            available: self.available_after,
            held: self.held_after,
            committed: self.committed_after,
        }
    }

    /// Whether its changes fit its kind ([`StockChange::fits`]).
    pub fn fits_its_kind(&self) -> bool {
        self.change().fits()
    }
}

/// Which of a pet's movements to list: those after a position, oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MovementQuery {
    /// The pet.
    pub pet_id: PetId,
    /// Only movements with a larger id.
    pub after: Option<MovementId>,
    /// Page size.
    pub limit: PageSize,
}

#[cfg(test)]
mod tests;

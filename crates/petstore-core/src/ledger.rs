//! The stock ledger: every change of a pet's stock is a movement, written in the transaction
//! that makes the change, so that a pet's stock is always the sum of its movements and its
//! history can be read (and repaired from) at any time.
//!
//! A pet has two balances: `available`, the units that can be ordered (the inventory's
//! `quantity`), and `committed`, the units in its open orders. Each kind of movement moves
//! them in its own way:
//!
//! | kind          | caused by                              | available | committed |
//! |---------------|----------------------------------------|-----------|-----------|
//! | `opening`     | the ledger beginning (`migrate --finish`) | + a    | + c       |
//! | `set`         | a stock level set (`PATCH /v1/inventory`) | ± d    | 0         |
//! | `adjusted`    | an adjustment with a reason            | ± d       | 0         |
//! | `committed`   | an order placed                        | − q       | + q       |
//! | `released`    | an open order cancelled                | + q       | − q       |
//! | `sold`        | an open order completed                | 0         | − q       |
//! | `written_off` | a pet deleted with units left          | − a       | 0         |
//!
//! `quantity` is the units moved (`a`, `|d|` or `q`), never negative.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize};

use crate::actor::{Actor, RequestId};
use crate::ids::{MovementId, OrderId, PetId};
use crate::validation::ValidationError;
use crate::values::{PageSize, Quantity, Stock};

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
}

impl MovementKind {
    /// Every kind.
    pub const ALL: [MovementKind; 7] = [
        MovementKind::Opening,
        MovementKind::Set,
        MovementKind::Adjusted,
        MovementKind::Committed,
        MovementKind::Released,
        MovementKind::Sold,
        MovementKind::WrittenOff,
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
        }
    }

    /// Whether a movement of this kind may move `quantity` units as `available` and
    /// `committed` changes say (the module's table). An opening's changes are its balances,
    /// which no change can make negative.
    pub fn fits(self, quantity: u32, available: i64, committed: i64) -> bool {
        let q = i64::from(quantity);
        match self {
            MovementKind::Opening => available == q && committed >= 0,
            MovementKind::Set | MovementKind::Adjusted => {
                committed == 0 && available.unsigned_abs() == u64::from(quantity)
            }
            MovementKind::Committed => available == -q && committed == q,
            MovementKind::Released => available == q && committed == -q,
            MovementKind::Sold => available == 0 && committed == -q,
            MovementKind::WrittenOff => available == -q && committed == 0,
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
    /// How `committed` moved.
    pub committed: i64,
}

impl StockChange {
    /// Stock set from `before` to `after` units (`set`), or adjusted so (`adjusted`).
    pub fn between(kind: MovementKind, before: Stock, after: Stock) -> Self {
        let available = i64::from(after.get()) - i64::from(before.get());
        Self {
            kind,
            quantity: before.get().abs_diff(after.get()),
            available,
            committed: 0,
        }
    }

    /// `quantity` units moved as a kind moving units between the two balances (or out of
    /// them) moves them: `committed`, `released`, `sold`, `written_off`.
    pub fn of(kind: MovementKind, quantity: u32) -> Self {
        let q = i64::from(quantity);
        let (available, committed) = match kind {
            MovementKind::Committed => (-q, q),
            MovementKind::Released => (q, -q),
            MovementKind::Sold => (0, -q),
            MovementKind::WrittenOff => (-q, 0),
            MovementKind::Opening | MovementKind::Set | MovementKind::Adjusted => (q, 0),
        };
        Self {
            kind,
            quantity,
            available,
            committed,
        }
    }

    /// An order's `quantity`: see [`StockChange::of`].
    pub fn of_order(kind: MovementKind, quantity: Quantity) -> Self {
        Self::of(kind, quantity.get())
    }
}

/// Why staff adjusted a pet's stock ("delivery 4411", "two found damaged"): 1 to 200
/// characters after trimming, no control characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Reason(String);

impl Reason {
    /// The most characters a reason may have.
    pub const MAX_CHARS: usize = 200;

    /// Trims `text` and checks it. The limit applies to the text as sent, as a name's does, so
    /// that the API's schema can state it.
    pub fn parse(text: &str) -> Result<Self, ValidationError> {
        if text.chars().count() > Self::MAX_CHARS {
            return Err(ValidationError::new(
                "reason",
                "must be at most 200 characters",
            ));
        }
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(ValidationError::new("reason", "must not be empty"));
        }
        if trimmed.chars().any(char::is_control) {
            return Err(ValidationError::new(
                "reason",
                "must not contain control characters",
            ));
        }
        Ok(Self(trimmed.to_owned()))
    }

    /// The reason as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Reason {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Reason::parse(&text).map_err(|e| serde::de::Error::custom(e.reason))
    }
}

/// What a movement belongs to besides its pet: the order line that moved it, or the reason
/// staff gave.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entry {
    /// The order, and the number of its line, whose units moved.
    pub order_line: Option<(OrderId, u32)>,
    /// Why staff moved the units.
    pub reason: Option<Reason>,
}

impl Entry {
    /// A movement of an order's line.
    pub fn line(order: OrderId, line_no: u32) -> Self {
        Self {
            order_line: Some((order, line_no)),
            reason: None,
        }
    }

    /// A movement staff gave `reason` for.
    pub fn because(reason: Reason) -> Self {
        Self {
            order_line: None,
            reason: Some(reason),
        }
    }
}

/// A movement as a use case hands it to the store: the change, the balances after it, and
/// what it belongs to. The store adds its id, time and cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMovement {
    /// The pet whose stock moved.
    pub pet_id: PetId,
    /// How it moved.
    pub change: StockChange,
    /// Units available after the movement.
    pub available_after: Stock,
    /// Units in open orders after the movement.
    pub committed_after: Stock,
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
    /// How many units `committed` moved (negative: out).
    pub committed_change: i64,
    /// Units available after the movement.
    #[cfg_attr(feature = "openapi", schema(value_type = u32))]
    pub available_after: Stock,
    /// Units in open orders after the movement.
    #[cfg_attr(feature = "openapi", schema(value_type = u32))]
    pub committed_after: Stock,
    /// The order whose units moved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_id: Option<OrderId>,
    /// The number of the order's line whose units moved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_no: Option<u32>,
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
    /// Whether its changes fit its kind ([`MovementKind::fits`]).
    pub fn fits_its_kind(&self) -> bool {
        self.kind
            .fits(self.quantity, self.available_change, self.committed_change)
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

/// A staff adjustment of a pet's stock: units in (positive) or out (negative), with a reason,
/// and, like Shopify's `changeFromQuantity`, the level the adjustment was meant for.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Adjustment {
    /// Units in (positive) or out (negative): −1,000,000 to 1,000,000, never 0.
    #[cfg_attr(feature = "openapi", schema(schema_with = adjustment_units_schema))]
    pub change: AdjustmentUnits,
    /// Why.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::reason_schema))]
    pub reason: Reason,
    /// The available units the adjustment expects to find; refused (`412`) when the stock is
    /// another level.
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(value_type = Option<i64>, minimum = 0, maximum = 4_294_967_295_i64)
    )]
    pub change_from_quantity: Option<Stock>,
}

/// The schema of an adjustment's units: −1,000,000 to −1, or 1 to 1,000,000.
#[cfg(feature = "openapi")]
fn adjustment_units_schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, OneOfBuilder, SchemaFormat, Type};
    let range = |min: i64, max: i64| {
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int32)))
            .minimum(Some(min))
            .maximum(Some(max))
    };
    OneOfBuilder::new()
        .item(range(-i64::from(Stock::MAX_SETTABLE), -1))
        .item(range(1, i64::from(Stock::MAX_SETTABLE)))
        .description(Some(
            "Units in (positive) or out (negative): -1000000 to 1000000, never 0.",
        ))
        .into()
}

/// The units of an [`Adjustment`]: −1,000,000 to 1,000,000, never 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct AdjustmentUnits(i32);

impl AdjustmentUnits {
    /// Checks `value`.
    pub fn new(value: i64) -> Result<Self, ValidationError> {
        match i32::try_from(value) {
            Ok(v) if v != 0 && v.unsigned_abs() <= Stock::MAX_SETTABLE => Ok(Self(v)),
            _ => Err(ValidationError::new(
                "change",
                "must be a non-zero integer from -1000000 to 1000000",
            )),
        }
    }

    /// The units, signed.
    pub const fn get(self) -> i32 {
        self.0
    }
}

impl<'de> Deserialize<'de> for AdjustmentUnits {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = crate::json_int::deserialize(deserializer)?;
        AdjustmentUnits::new(value).map_err(|e| serde::de::Error::custom(e.reason))
    }
}

#[cfg(test)]
mod tests;

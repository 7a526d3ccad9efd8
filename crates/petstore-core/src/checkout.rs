//! A checkout: one order of 1 to 50 lines, placed all or nothing, each line keeping the price
//! its pet had, the order its total. What a client sends ([`NewCheckout`]) and what the use
//! case hands a store ([`PlacedCheckout`]); a refusal names its lines
//! ([`LineRefusal`](crate::LineRefusal)).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize};

use crate::ids::{OrderId, OwnerId, PetId};
use crate::model::{NewOrder, Order, OrderLine};
use crate::money::{Price, Total};
use crate::validation::ValidationError;
use crate::values::Quantity;

/// A line of a checkout: units of one pet.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewLine {
    /// The pet; it must exist, be `available`, have a price and the units.
    pub pet_id: PetId,
    /// How many units; 1 when not given.
    #[serde(default)]
    pub quantity: Quantity,
}

/// The lines of a checkout: 1 to 50. Each should name a pet no other line names: a checkout
/// naming one twice is refused (`PetRepeated`), as a business rule the body's schema cannot
/// say.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct CheckoutLines(Vec<NewLine>);

impl CheckoutLines {
    /// The most lines a checkout may have.
    pub const MAX: usize = 50;

    /// Checks `lines`.
    pub fn new(lines: Vec<NewLine>) -> Result<Self, ValidationError> {
        if lines.is_empty() || lines.len() > Self::MAX {
            return Err(ValidationError::new("lines", "must hold 1 to 50 lines"));
        }
        Ok(Self(lines))
    }

    /// The lines, in the order given (line 1 first).
    pub fn lines(&self) -> &[NewLine] {
        &self.0
    }

    /// The first line (numbered from 1) naming a pet an earlier line names, and that pet.
    pub fn repeated(&self) -> Option<(u16, PetId)> {
        self.0
            .iter()
            .zip(1u16..)
            .enumerate()
            .find(|(n, (line, _))| self.0[..*n].iter().any(|e| e.pet_id == line.pet_id))
            .map(|(_, (line, line_no))| (line_no, line.pet_id))
    }
}

impl<'de> Deserialize<'de> for CheckoutLines {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let lines = Vec::<NewLine>::deserialize(deserializer)?;
        CheckoutLines::new(lines).map_err(|e| serde::de::Error::custom(e.reason))
    }
}

/// A checkout to place: its lines, a ship date, and the total the client expects to pay.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewCheckout {
    /// 1 to 50 lines, each pet in one line only.
    #[cfg_attr(
        feature = "openapi",
        schema(value_type = Vec<NewLine>, min_items = 1, max_items = 50)
    )]
    pub lines: CheckoutLines,
    /// When it is to ship, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ship_date: Option<DateTime<Utc>>,
    /// The total the client showed its buyer, in minor units of the shop's currency: the
    /// checkout is refused (`total_mismatch`) when the lines come to another, because a price
    /// changed since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_total: Option<Total>,
}

/// A line as the use case places it: its pet and units, and the pet's price, read under its
/// lock in the checkout's transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PricedLine {
    /// The pet.
    pub pet_id: PetId,
    /// How many units.
    pub quantity: Quantity,
    /// The pet's price when the order is placed.
    pub price: Option<Price>,
}

/// An order of several lines, as the use case hands it to a store to be given an id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacedCheckout {
    /// Line 1.
    pub first: PricedLine,
    /// Lines 2 and on, in order.
    pub more: Vec<PricedLine>,
    /// When it is to ship, if known.
    pub ship_date: Option<DateTime<Utc>>,
    /// Who placed it.
    pub owner: Option<OwnerId>,
}

impl PlacedCheckout {
    /// The one-line order `new` is, placed by `owner` while its pet's price was `price`.
    pub fn of_order(new: &NewOrder, owner: Option<OwnerId>, price: Option<Price>) -> Self {
        Self {
            first: PricedLine {
                pet_id: new.pet_id,
                quantity: new.quantity,
                price,
            },
            more: Vec::new(),
            ship_date: new.ship_date,
            owner,
        }
    }

    /// The open order this is once a store has given it `id` ([`Order::open`]).
    pub fn into_order(self, id: OrderId) -> Order {
        let more = (2u16..).zip(&self.more).map(|(n, line)| line.numbered(n));
        let currency = self.first.price.map(|price| price.currency);
        Order::open(
            id,
            self.owner,
            self.ship_date,
            currency,
            self.first.numbered(1),
            more,
        )
    }
}

impl PricedLine {
    /// The order line this is as line `line_no`.
    pub fn numbered(&self, line_no: u16) -> OrderLine {
        OrderLine::priced(line_no, self.pet_id, self.quantity, self.price)
    }

    /// What the line costs: its unit price times its units, when priced.
    pub fn amount(&self) -> Option<Total> {
        self.price.map(|price| price.amount.times(self.quantity))
    }
}

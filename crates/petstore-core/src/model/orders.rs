//! Orders: what a client places, and the order and its lines the store keeps.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize};

use crate::ids::{OrderId, OwnerId, PetId};
use crate::money::{Amount, Currency, Price, Total};
use crate::values::Quantity;

/// An order to place.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewOrder {
    /// The pet ordered; it must exist.
    pub pet_id: PetId,
    /// How many units; 1 when not given.
    #[serde(default)]
    pub quantity: Quantity,
    /// When it is to ship, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ship_date: Option<DateTime<Utc>>,
}

impl NewOrder {
    /// An order for `quantity` units of `pet_id`, with no ship date.
    pub fn new(pet_id: PetId, quantity: Quantity) -> Self {
        Self {
            pet_id,
            quantity,
            ship_date: None,
        }
    }

    /// The open order this is once a store has given it `id`, placed by `owner` while its
    /// pet's price was `price`: one line, priced when the pet had a price (a store reading
    /// an order's row makes its first line here). Destructured, so a field added to both
    /// types is a compile error here until it is carried over.
    pub fn into_order(self, id: OrderId, owner: Option<OwnerId>, price: Option<Price>) -> Order {
        let Self {
            pet_id,
            quantity,
            ship_date,
        } = self;
        let line = OrderLine::priced(1, pet_id, quantity, price);
        Order::open(
            id,
            owner,
            ship_date,
            price.map(|price| price.currency),
            line,
            [],
        )
    }
}

/// An order: units of pets, in lines, each with the price its pet had when the order was
/// placed. An order placed by `placeOrder` has one line, and `petId` and `quantity` are that
/// line's.
///
/// An order is *open* until it is completed or cancelled. Completing is final; cancelling
/// removes the order and puts its units back in stock.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Order {
    /// Its id, given by the store.
    pub id: OrderId,
    /// The pet ordered.
    pub pet_id: PetId,
    /// How many units.
    pub quantity: Quantity,
    /// When it is to ship, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ship_date: Option<DateTime<Utc>>,
    /// True once the order has been fulfilled.
    pub complete: bool,
    /// Who placed it, when known. Not part of the JSON shape: it decides who may see the
    /// order, and is not shown to anyone.
    #[serde(skip)]
    pub owner: Option<OwnerId>,
    /// Its lines, numbered from 1.
    #[serde(default)]
    pub lines: Vec<OrderLine>,
    /// The currency of its amounts, when its lines are priced: the shop's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub currency: Option<Currency>,
    /// What it costs: the sum of its lines' amounts, when every line is priced. Never rounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub total_amount: Option<Total>,
}

impl Order {
    /// The open order `id` of line `first` and the lines after it, placed by `owner`, its
    /// amounts in `currency`: `petId` and `quantity` are line 1's (the seed's shape), and the
    /// total is the sum of the lines' amounts when every line is priced. Every order is built
    /// here, so a field added to orders is set in one place.
    pub fn open(
        id: OrderId,
        owner: Option<OwnerId>,
        ship_date: Option<DateTime<Utc>>,
        currency: Option<Currency>,
        first: OrderLine,
        more: impl IntoIterator<Item = OrderLine>,
    ) -> Order {
        let (pet_id, quantity) = (first.pet_id, first.quantity);
        let lines: Vec<OrderLine> = std::iter::once(first).chain(more).collect();
        Order {
            id,
            pet_id,
            quantity,
            ship_date,
            complete: false,
            owner,
            currency,
            total_amount: Self::total_of(&lines),
            lines,
        }
    }

    /// The total of `lines`: the sum of their amounts when every line is priced, else none.
    pub fn total_of(lines: &[OrderLine]) -> Option<Total> {
        Total::sum_known(lines.iter().map(|line| line.amount))
    }

    /// The same order with `more` lines after its first (a store reading lines 2 and on from
    /// where it keeps them), its total made again from them all.
    #[must_use]
    pub fn with_more_lines(mut self, more: Vec<OrderLine>) -> Self {
        self.lines.truncate(1);
        self.lines.extend(more);
        self.total_amount = Self::total_of(&self.lines);
        self
    }
}

/// A line of an order: units of one pet, and the unit price the pet had when the order was
/// placed (none when it had none: such a line, and its order, are unpriced).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrderLine {
    /// Its place in the order, from 1.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 50))]
    pub line_no: u16,
    /// The pet ordered.
    pub pet_id: PetId,
    /// How many units.
    pub quantity: Quantity,
    /// The pet's unit price when the order was placed, in the order's currency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub unit_amount: Option<Amount>,
    /// `unitAmount` × `quantity`, exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub amount: Option<Total>,
}

impl OrderLine {
    /// Line `line_no`: `quantity` units of `pet_id` at `price` (none: an unpriced line).
    pub fn priced(line_no: u16, pet_id: PetId, quantity: Quantity, price: Option<Price>) -> Self {
        Self {
            line_no,
            pet_id,
            quantity,
            unit_amount: price.map(|price| price.amount),
            amount: price.map(|price| price.amount.times(quantity)),
        }
    }
}

/// A change to an order; absent fields stay as they are.
///
/// `shipDate: null` clears the ship date (JSON Merge Patch semantics).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OrderPatch {
    /// A date-time sets the ship date, `null` clears it, and leaving it out keeps it.
    #[serde(
        default,
        deserialize_with = "present_or_null",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    pub ship_date: Option<Option<DateTime<Utc>>>,
    /// `true` completes the order. `false` on a complete order is an invalid transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete: Option<bool>,
}

/// Tells a field sent as `null` (`Some(None)`) from a field not sent (`None`, via `default`).
fn present_or_null<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

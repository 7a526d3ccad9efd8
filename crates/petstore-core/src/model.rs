//! The resources of the API, in the contract's exact JSON shapes (camelCase).
//!
//! Request bodies (`New*`, [`OrderPatch`], [`InventoryUpdate`]) reject unknown fields, so a
//! client cannot assign what it should not (an `id`, a `complete` flag on a new order).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize};

use crate::ids::{CategoryId, PetId};
use crate::money::Price;
use crate::validation::ValidationError;
use crate::values::{Description, Name, Stock};

/// Where a pet stands in the sale cycle: `available` (orders may be placed), `pending` (its
/// last units are in open orders, or staff held it back), `sold` (no stock, no open order).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PetStatus {
    /// Orders may be placed.
    #[default]
    Available,
    /// Its last units are in open orders (or staff set it so); no new orders.
    Pending,
    /// Gone: no stock and no open order left.
    Sold,
}

impl PetStatus {
    /// Every status, in the contract's order.
    pub const ALL: [PetStatus; 3] = [PetStatus::Available, PetStatus::Pending, PetStatus::Sold];

    /// The status as the API spells it.
    pub const fn as_str(self) -> &'static str {
        match self {
            PetStatus::Available => "available",
            PetStatus::Pending => "pending",
            PetStatus::Sold => "sold",
        }
    }
}

impl fmt::Display for PetStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PetStatus {
    type Err = ValidationError;

    fn from_str(text: &str) -> Result<Self, ValidationError> {
        PetStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == text)
            .ok_or_else(|| {
                ValidationError::new("status", "must be one of available, pending, sold")
            })
    }
}

/// A pet to create, or the full new state of a pet to replace.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewPet {
    /// The pet's name.
    pub name: Name,
    /// The category it belongs to; it must exist.
    pub category_id: CategoryId,
    /// Its status; `available` when not given.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(default = "available"))]
    pub status: PetStatus,
}

impl NewPet {
    /// An `available` pet named `name` in `category_id`.
    pub fn new(name: Name, category_id: CategoryId) -> Self {
        Self {
            name,
            category_id,
            status: PetStatus::default(),
        }
    }

    /// The same pet with another status.
    #[must_use]
    pub fn with_status(mut self, status: PetStatus) -> Self {
        self.status = status;
        self
    }

    /// The pet this is once a store has given it `id` (or once it replaces pet `id`, whose
    /// price the replacing use case carries over): a new pet has no price.
    ///
    /// Every store builds its answer to an insert here, so a field added to both types is
    /// carried over in one place, and forgetting it is a compile error here.
    pub fn into_pet(self, id: PetId) -> Pet {
        let Self {
            name,
            category_id,
            status,
        } = self;
        Pet {
            id,
            name,
            category_id,
            status,
            price: None,
        }
    }
}

/// A pet in the catalogue.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pet {
    /// Its id, given by the store.
    pub id: PetId,
    /// Its name.
    pub name: Name,
    /// The category it belongs to.
    pub category_id: CategoryId,
    /// Its status.
    pub status: PetStatus,
    /// Its price, once staff set one (`PUT /v1/pets/{petId}/price`); without one it can be
    /// ordered but not checked out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(read_only, nullable = false))]
    pub price: Option<Price>,
}

/// A category to create, or the full new state of a category to replace.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewCategory {
    /// Its name, unique among categories regardless of case.
    pub name: Name,
    /// An optional description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Description>,
}

impl NewCategory {
    /// A category named `name` with no description.
    pub fn new(name: Name) -> Self {
        Self {
            name,
            description: None,
        }
    }
}

/// A category of pets.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Category {
    /// Its id, given by the store.
    pub id: CategoryId,
    /// Its name.
    pub name: Name,
    /// Its description, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Description>,
}

/// The stock of one pet. Every pet has exactly one.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InventoryItem {
    /// The pet.
    pub pet_id: PetId,
    /// Units in stock that can be ordered (available).
    pub quantity: Stock,
    /// The pet's status.
    pub status: PetStatus,
    /// Units set aside by active holds: out of `quantity` until a hold ends.
    #[serde(default)]
    pub held: Stock,
    /// Units in open orders: out of `quantity` until an order is completed or cancelled.
    #[serde(default)]
    pub committed: Stock,
}

/// A new stock level for a pet: 0 to 1,000,000 units.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InventoryUpdate {
    /// The new level.
    #[serde(deserialize_with = "settable_stock")]
    #[cfg_attr(feature = "openapi", schema(schema_with = settable_stock_schema))]
    pub quantity: Stock,
}

/// The schema of a stock level a client sets: 0 to 1,000,000 (beside the type it describes,
/// so that the model does not depend on the schemas module, which depends on it).
#[cfg(feature = "openapi")]
fn settable_stock_schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
        .minimum(Some(0))
        .maximum(Some(Stock::MAX_SETTABLE))
        .description(Some("The new number of units in stock: 0 to 1000000."))
        .into()
}

fn settable_stock<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Stock, D::Error> {
    let value = crate::json_int::deserialize(deserializer)?;
    Stock::settable(value).map_err(|e| serde::de::Error::custom(e.reason))
}

mod orders;

pub use orders::{NewOrder, Order, OrderLine, OrderPatch};

#[cfg(test)]
mod tests;

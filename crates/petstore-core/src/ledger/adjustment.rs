//! A staff adjustment of a pet's stock, and the reason it needs.

use serde::{Deserialize, Deserializer, Serialize};

use crate::validation::ValidationError;
use crate::values::Stock;

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

//! Identifiers: positive integers no larger than 2^53 - 1.
//!
//! The upper bound is the largest integer a JavaScript client can hold exactly; an id above
//! it would be silently rounded on the way to a browser and come back as another id.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize};

use crate::validation::ValidationError;

/// The largest id the service hands out or accepts: 2^53 - 1.
pub const MAX_ID: i64 = (1 << 53) - 1;

fn check_id(value: i64) -> Result<i64, ValidationError> {
    if (1..=MAX_ID).contains(&value) {
        Ok(value)
    } else {
        Err(ValidationError::new(
            "id",
            "must be a positive integer no greater than 9007199254740991",
        ))
    }
}

macro_rules! define_id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        #[serde(transparent)]
        pub struct $name(i64);

        impl $name {
            /// Checks that `value` is a valid id (1 ..= [`MAX_ID`]).
            pub fn new(value: i64) -> Result<Self, ValidationError> {
                check_id(value).map(Self)
            }

            /// The id as a plain integer.
            pub const fn get(self) -> i64 {
                self.0
            }
        }

        impl TryFrom<i64> for $name {
            type Error = ValidationError;

            fn try_from(value: i64) -> Result<Self, ValidationError> {
                Self::new(value)
            }
        }

        impl From<$name> for i64 {
            fn from(id: $name) -> i64 {
                id.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        /// Parses the decimal form used in paths and query strings: digits, optionally with a
        /// zero fraction (`5.0`, an integer to JSON Schema); no sign, no spaces.
        impl FromStr for $name {
            type Err = ValidationError;

            fn from_str(text: &str) -> Result<Self, ValidationError> {
                let value = crate::json_int::parse_text(text)
                    .ok_or_else(|| ValidationError::new("id", "must be a positive integer"))?;
                Self::new(value)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = crate::json_int::deserialize(deserializer)?;
                Self::new(value).map_err(|e| serde::de::Error::custom(e.reason))
            }
        }
    };
}

define_id! {
    /// The id of a [`Pet`](crate::Pet).
    PetId
}
define_id! {
    /// The id of a [`Category`](crate::Category).
    CategoryId
}
define_id! {
    /// The id of an [`Order`](crate::Order).
    OrderId
}
define_id! {
    /// Who placed an order. The HTTP service uses the id of the API key that placed it;
    /// an embedder may use any positive id of its own (a customer number, a user id).
    OwnerId
}
define_id! {
    /// The id of a recorded [`Event`](crate::Event); ids increase with every event.
    EventId
}
define_id! {
    /// The id of an [`ApiKey`](crate::ApiKey). Never reused: a revoked key keeps its id, and
    /// the orders it placed stay its own.
    KeyId
}

define_id! {
    /// The id of a [`Webhook`](crate::webhooks::Webhook) subscription.
    WebhookId
}
define_id! {
    /// The id of a recorded [`DeliveryAttempt`](crate::webhooks::DeliveryAttempt).
    DeliveryId
}
define_id! {
    /// The id of a recorded stock [`Movement`](crate::Movement); ids increase with every
    /// movement.
    MovementId
}
define_id! {
    /// The id of a [`Hold`](crate::Hold): units set aside for a basket. Never reused.
    HoldId
}

impl From<KeyId> for OwnerId {
    /// Orders belong to the key that placed them.
    fn from(key: KeyId) -> OwnerId {
        OwnerId(key.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_one_and_two_to_the_fifty_three_minus_one() {
        assert!(PetId::new(0).is_err());
        assert!(PetId::new(-1).is_err());
        assert_eq!(PetId::new(1).map(PetId::get), Ok(1));
        assert_eq!(
            PetId::new(MAX_ID).map(PetId::get),
            Ok(9_007_199_254_740_991)
        );
        assert!(PetId::new(MAX_ID + 1).is_err());
    }

    #[test]
    fn parses_digits_with_an_optional_zero_fraction() {
        assert_eq!("42".parse::<OrderId>().map(OrderId::get), Ok(42));
        assert_eq!(
            "42.0".parse::<OrderId>().map(OrderId::get),
            Ok(42),
            "an integer to JSON Schema"
        );
        for bad in [
            "",
            "0",
            "0.0",
            "-1",
            "+1",
            " 1",
            "1.5",
            "1e3",
            "abc",
            "99999999999999999999",
            "9007199254740992",
        ] {
            assert!(bad.parse::<OrderId>().is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn deserializes_from_json_numbers_and_checks_range() {
        assert_eq!(
            serde_json::from_str::<CategoryId>("7").ok(),
            CategoryId::new(7).ok()
        );
        assert_eq!(
            serde_json::from_str::<CategoryId>("7.0").ok(),
            CategoryId::new(7).ok()
        );
        assert!(serde_json::from_str::<CategoryId>("0").is_err());
        assert!(serde_json::from_str::<CategoryId>("9007199254740992").is_err());
        assert!(serde_json::from_str::<CategoryId>("\"7\"").is_err());
        assert_eq!(
            serde_json::to_string(&CategoryId::new(7).unwrap()).unwrap(),
            "7"
        );
    }
}

//! Money: a shop's [`Currency`], a unit price ([`Amount`]) and a line's or an order's
//! [`Total`], all in integer minor units (cents for `EUR`), so that nothing is ever rounded.
//!
//! The bounds make every total exact both in `i64` and in a JavaScript number (below 2^53, as
//! ids are): a unit price is at most 99,999,999,999 minor units, an order line takes at most
//! 1,000 units ([`Quantity::MAX`]), so a line is below 10^14 and 50 lines below 5 × 10^15.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ids::{MAX_ID, PetId};
use crate::validation::ValidationError;
use crate::values::Quantity;

/// An ISO 4217 currency a shop prices in, with the digits of its minor unit.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Currency {
    code: &'static str,
    exponent: u8,
}

/// The currencies a shop may price in: ISO 4217's circulating currencies, pinned here (no
/// fund codes, no metals). Each has two minor-unit digits but those listed in [`EXPONENTS`].
/// A code once listed stays listed: a shop stores its currency once, and must start again
/// under every later version. In ascending order: a stored price's currency is parsed on
/// every read, by a binary search.
const CODES: &[&str] = &[
    "AED", "AFN", "ALL", "AMD", "ANG", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT",
    "BGN", "BHD", "BIF", "BMD", "BND", "BOB", "BRL", "BSD", "BTN", "BWP", "BYN", "BZD", "CAD",
    "CDF", "CHF", "CLP", "CNY", "COP", "CRC", "CUP", "CVE", "CZK", "DJF", "DKK", "DOP", "DZD",
    "EGP", "ERN", "ETB", "EUR", "FJD", "FKP", "GBP", "GEL", "GHS", "GIP", "GMD", "GNF", "GTQ",
    "GYD", "HKD", "HNL", "HTG", "HUF", "IDR", "ILS", "INR", "IQD", "IRR", "ISK", "JMD", "JOD",
    "JPY", "KES", "KGS", "KHR", "KMF", "KPW", "KRW", "KWD", "KYD", "KZT", "LAK", "LBP", "LKR",
    "LRD", "LSL", "LYD", "MAD", "MDL", "MGA", "MKD", "MMK", "MNT", "MOP", "MRU", "MUR", "MVR",
    "MWK", "MXN", "MYR", "MZN", "NAD", "NGN", "NIO", "NOK", "NPR", "NZD", "OMR", "PAB", "PEN",
    "PGK", "PHP", "PKR", "PLN", "PYG", "QAR", "RON", "RSD", "RUB", "RWF", "SAR", "SBD", "SCR",
    "SDG", "SEK", "SGD", "SHP", "SLE", "SOS", "SRD", "SSP", "STN", "SVC", "SYP", "SZL", "THB",
    "TJS", "TMT", "TND", "TOP", "TRY", "TTD", "TWD", "TZS", "UAH", "UGX", "USD", "UYU", "UZS",
    "VED", "VES", "VND", "VUV", "WST", "XAF", "XCD", "XCG", "XOF", "XPF", "YER", "ZAR", "ZMW",
    "ZWG",
];

/// The currencies whose minor unit is not a hundredth: none (`JPY`), or a thousandth (`KWD`).
const EXPONENTS: &[(&str, u8)] = &[
    ("BIF", 0),
    ("CLP", 0),
    ("DJF", 0),
    ("GNF", 0),
    ("ISK", 0),
    ("JPY", 0),
    ("KMF", 0),
    ("KRW", 0),
    ("PYG", 0),
    ("RWF", 0),
    ("UGX", 0),
    ("VND", 0),
    ("VUV", 0),
    ("XAF", 0),
    ("XOF", 0),
    ("XPF", 0),
    ("BHD", 3),
    ("IQD", 3),
    ("JOD", 3),
    ("KWD", 3),
    ("LYD", 3),
    ("OMR", 3),
    ("TND", 3),
];

impl Currency {
    /// The euro, a new shop's currency unless its operator chooses another.
    pub const EUR: Currency = Currency {
        code: "EUR",
        exponent: 2,
    };

    /// The currency of ISO 4217 code `code` (three capital letters), if a shop may price in
    /// it.
    pub fn parse(code: &str) -> Result<Self, ValidationError> {
        let Ok(at) = CODES.binary_search(&code) else {
            return Err(ValidationError::new(
                "currency",
                "must be the ISO 4217 code of a circulating currency, in capitals (EUR, USD, JPY…)",
            ));
        };
        let code = CODES[at];
        let exponent = EXPONENTS
            .iter()
            .find(|(listed, _)| *listed == code)
            .map_or(2, |&(_, exponent)| exponent);
        Ok(Self { code, exponent })
    }

    /// Its ISO 4217 code: `EUR`.
    pub const fn code(self) -> &'static str {
        self.code
    }

    /// How many digits its minor unit has: 2 for `EUR` (cents), 0 for `JPY`, 3 for `KWD`.
    pub const fn exponent(self) -> u8 {
        self.exponent
    }

    /// `minor_units` of this currency for people to read, with its code: `37.50 EUR` for
    /// 3750, `3750 JPY`, `3.750 KWD`. Digits only move: nothing is rounded.
    pub fn show(self, minor_units: i64) -> String {
        let digits = minor_units.unsigned_abs().to_string();
        let sign = if minor_units < 0 { "-" } else { "" };
        let places = usize::from(self.exponent);
        if places == 0 {
            return format!("{sign}{digits} {}", self.code);
        }
        let padded = format!("{digits:0>width$}", width = places + 1);
        let (whole, fraction) = padded.split_at(padded.len() - places);
        format!("{sign}{whole}.{fraction} {}", self.code)
    }
}

impl std::str::FromStr for Currency {
    type Err = ValidationError;

    fn from_str(code: &str) -> Result<Self, ValidationError> {
        Currency::parse(code)
    }
}

/// A new shop's currency, unless its operator chooses another: the euro.
impl Default for Currency {
    fn default() -> Self {
        Currency::EUR
    }
}

impl fmt::Debug for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code)
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code)
    }
}

impl Serialize for Currency {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.code)
    }
}

impl<'de> Deserialize<'de> for Currency {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let code = String::deserialize(deserializer)?;
        Currency::parse(&code).map_err(|e| serde::de::Error::custom(e.reason))
    }
}

/// A unit price in minor units of the shop's currency: 0 ..= 99,999,999,999 (a price of 0 is
/// a pet given away).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Amount(i64);

impl Amount {
    /// The largest unit price.
    pub const MAX: i64 = 99_999_999_999;

    /// Checks that `value` is within 0 ..= [`Amount::MAX`].
    pub fn new(value: i64) -> Result<Self, ValidationError> {
        if (0..=Self::MAX).contains(&value) {
            Ok(Self(value))
        } else {
            Err(ValidationError::new(
                "amount",
                "must be an integer from 0 to 99999999999, in minor units of the shop's currency",
            ))
        }
    }

    /// The minor units.
    pub const fn get(self) -> i64 {
        self.0
    }

    /// A line's amount: this unit price times `quantity`, exactly (below 10^14).
    pub fn times(self, quantity: Quantity) -> Total {
        // At most 99,999,999,999 × 1,000: no overflow, and below `Total::MAX`.
        Total(self.0 * i64::from(quantity.get()))
    }
}

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = crate::json_int::deserialize(deserializer)?;
        Amount::new(value).map_err(|e| serde::de::Error::custom(e.reason))
    }
}

/// A pet's price: a unit price in the shop's currency. Read-only on a pet: set and removed
/// through the pet's own price (so a client replacing a pet without knowing prices cannot
/// clear it).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Price {
    /// The unit price, in minor units of `currency`.
    pub amount: Amount,
    /// The shop's currency.
    pub currency: Currency,
}

/// A pet's price as its own resource answers it (`/v1/pets/{petId}/price`): which pet, and
/// the price.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PetPrice {
    /// The pet.
    pub pet_id: PetId,
    /// The unit price, in minor units of `currency`.
    pub amount: Amount,
    /// The shop's currency.
    pub currency: Currency,
}

impl PetPrice {
    /// Pet `pet_id`'s `price`.
    pub fn of(pet_id: PetId, price: Price) -> Self {
        let Price { amount, currency } = price;
        Self {
            pet_id,
            amount,
            currency,
        }
    }
}

impl<'de> Deserialize<'de> for Total {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = crate::json_int::deserialize(deserializer)?;
        Total::new(value).map_err(|e| serde::de::Error::custom(e.reason))
    }
}

/// A line's amount or an order's total, in minor units: 0 ..= 2^53 − 1, exact in `i64` and in
/// a JavaScript number. Only made by multiplying an [`Amount`] and adding totals, never by
/// dividing, so nothing is rounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Total(i64);

impl Total {
    /// Nothing.
    pub const ZERO: Total = Total(0);

    /// The largest total: 2^53 − 1, the largest integer a JavaScript number holds exactly.
    pub const MAX: i64 = MAX_ID;

    /// The minor units.
    pub const fn get(self) -> i64 {
        self.0
    }

    /// The sum of `totals`; `None` past [`Total::MAX`]. Up to 90 lines of the largest price
    /// and quantity always fit.
    pub fn sum(totals: impl IntoIterator<Item = Total>) -> Option<Total> {
        totals.into_iter().try_fold(Total::ZERO, |sum, total| {
            sum.0
                .checked_add(total.0)
                .filter(|&sum| sum <= Self::MAX)
                .map(Total)
        })
    }

    /// The sum of `amounts` when every one is known (each line priced); `None` when one is
    /// not, or past [`Total::MAX`].
    pub fn sum_known(amounts: impl IntoIterator<Item = Option<Total>>) -> Option<Total> {
        amounts
            .into_iter()
            .collect::<Option<Vec<Total>>>()
            .and_then(Total::sum)
    }

    /// A stored total, checked against the bounds.
    pub fn new(value: i64) -> Result<Self, ValidationError> {
        if (0..=Self::MAX).contains(&value) {
            Ok(Self(value))
        } else {
            Err(ValidationError::new(
                "total",
                "must be an integer from 0 to 9007199254740991",
            ))
        }
    }
}

#[cfg(test)]
mod tests;

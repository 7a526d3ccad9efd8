//! Validated values. Each type can only hold what the contract allows, so code that has one
//! never checks it again ("parse, don't validate").

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize};

use crate::validation::ValidationError;

/// A pet or category name: at most 100 characters as sent, at least one after trimming, no
/// control characters inside.
///
/// Leading and trailing white space is removed; what is kept is what was validated. The limit
/// applies to the text as sent, so that it can be stated exactly as `maxLength` in the API's
/// schema.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Name(String);

impl Name {
    /// The most characters (Unicode scalar values) a name may have.
    pub const MAX_CHARS: usize = 100;

    /// Trims `text` and checks it.
    pub fn parse(text: &str) -> Result<Self, ValidationError> {
        Self::check(text).map(|trimmed| Self(trimmed.to_owned()))
    }

    /// The trimmed text, if `text` is a valid name.
    fn check(text: &str) -> Result<&str, ValidationError> {
        // Every store read checks its names again, so the usual name, short and ASCII, takes
        // the short way: at most MAX_CHARS bytes are at most MAX_CHARS characters, and an
        // ASCII control character is a control byte.
        if text.len() > Self::MAX_CHARS && text.chars().count() > Self::MAX_CHARS {
            return Err(ValidationError::new(
                "name",
                "must be at most 100 characters",
            ));
        }
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(ValidationError::new("name", "must not be empty"));
        }
        let control = if trimmed.is_ascii() {
            trimmed.bytes().any(|b| b.is_ascii_control())
        } else {
            trimmed.chars().any(char::is_control)
        };
        if control {
            return Err(ValidationError::new(
                "name",
                "must not contain control characters",
            ));
        }
        Ok(trimmed)
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The same as [`Name::parse`], keeping `text`'s allocation when it needs no trimming.
impl TryFrom<String> for Name {
    type Error = ValidationError;

    fn try_from(text: String) -> Result<Self, ValidationError> {
        let trimmed = Self::check(&text)?;
        if trimmed.len() == text.len() {
            Ok(Self(text))
        } else {
            Ok(Self(trimmed.to_owned()))
        }
    }
}

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Name::try_from(text).map_err(|e| serde::de::Error::custom(e.reason))
    }
}

/// A category description: at most 1000 characters. Line breaks and tabs are allowed, other
/// control characters are not. Kept exactly as given (descriptions may be formatted).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Description(String);

impl Description {
    /// The most characters a description may have.
    pub const MAX_CHARS: usize = 1000;

    /// Checks `text`.
    pub fn parse(text: &str) -> Result<Self, ValidationError> {
        if text.chars().count() > Self::MAX_CHARS {
            return Err(ValidationError::new(
                "description",
                "must be at most 1000 characters",
            ));
        }
        if text
            .chars()
            .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
        {
            return Err(ValidationError::new(
                "description",
                "must not contain control characters other than line breaks and tabs",
            ));
        }
        Ok(Self(text.to_owned()))
    }

    /// The description as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Description {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Description::parse(&text).map_err(|e| serde::de::Error::custom(e.reason))
    }
}

/// How many units of a pet one order takes: 1 to 1000.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Quantity(u32);

impl Quantity {
    /// The fewest units an order may take.
    pub const MIN: u32 = 1;
    /// The most units one order may take.
    pub const MAX: u32 = 1000;
    /// One unit, the default of an order that does not say.
    pub const ONE: Quantity = Quantity(1);

    /// Checks that `value` is within 1 ..= 1000.
    pub fn new(value: i64) -> Result<Self, ValidationError> {
        match u32::try_from(value) {
            Ok(v) if (Self::MIN..=Self::MAX).contains(&v) => Ok(Self(v)),
            _ => Err(ValidationError::new(
                "quantity",
                "must be an integer from 1 to 1000",
            )),
        }
    }

    /// The number of units.
    pub const fn get(self) -> u32 {
        self.0
    }
}

impl Default for Quantity {
    fn default() -> Self {
        Self::ONE
    }
}

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = crate::json_int::deserialize(deserializer)?;
        Quantity::new(value).map_err(|e| serde::de::Error::custom(e.reason))
    }
}

/// Units of a pet in stock.
///
/// A client may set stock to at most [`Stock::MAX_SETTABLE`] ([`Stock::settable`] checks it).
/// Cancelling orders puts their units back even when that lifts the level above that bound,
/// because refusing a cancellation, or dropping units, would be worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
#[serde(transparent)]
pub struct Stock(u32);

impl Stock {
    /// No units.
    pub const ZERO: Stock = Stock(0);
    /// The highest level a client may set: one million units.
    pub const MAX_SETTABLE: u32 = 1_000_000;

    /// Checks a level a client asks for: 0 ..= 1,000,000.
    pub fn settable(value: i64) -> Result<Self, ValidationError> {
        match u32::try_from(value) {
            Ok(v) if v <= Self::MAX_SETTABLE => Ok(Self(v)),
            _ => Err(ValidationError::new(
                "quantity",
                "must be an integer from 0 to 1000000",
            )),
        }
    }

    /// A level as the store holds it. Any non-negative level is a valid stock level.
    pub const fn from_level(units: u32) -> Self {
        Self(units)
    }

    /// The number of units.
    pub const fn get(self) -> u32 {
        self.0
    }

    /// True when no unit is left.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The level after taking `quantity` units out, or `None` if there are not enough.
    pub fn take(self, quantity: Quantity) -> Option<Stock> {
        self.0.checked_sub(quantity.get()).map(Stock)
    }

    /// The level after putting `quantity` units back (saturating at `u32::MAX`, which no
    /// sequence of orders of at most 1000 units can reach in practice).
    pub fn put_back(self, quantity: Quantity) -> Stock {
        Stock(self.0.saturating_add(quantity.get()))
    }
}

impl<'de> Deserialize<'de> for Stock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = crate::json_int::deserialize(deserializer)?;
        u32::try_from(value)
            .map(Stock)
            .map_err(|_| serde::de::Error::custom("must be a non-negative integer"))
    }
}

/// How many items one page of a list holds: 1 to 100, 20 unless the client says otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct PageSize(u32);

impl PageSize {
    /// The largest page a client may ask for.
    pub const MAX: u32 = 100;
    /// The page size when the client does not ask for one.
    pub const DEFAULT: PageSize = PageSize(20);
    /// The largest page.
    pub const MAX_PAGE: PageSize = PageSize(Self::MAX);

    /// Checks that `value` is within 1 ..= 100.
    pub fn new(value: i64) -> Result<Self, ValidationError> {
        match u32::try_from(value) {
            Ok(v) if (1..=Self::MAX).contains(&v) => Ok(Self(v)),
            _ => Err(ValidationError::new(
                "limit",
                "must be an integer from 1 to 100",
            )),
        }
    }

    /// The number of items.
    pub const fn get(self) -> u32 {
        self.0
    }
}

impl Default for PageSize {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl FromStr for PageSize {
    type Err = ValidationError;

    /// Digits, optionally with a zero fraction (`20.0`, an integer to JSON Schema).
    fn from_str(text: &str) -> Result<Self, ValidationError> {
        let value = crate::json_int::parse_text(text)
            .ok_or_else(|| ValidationError::new("limit", "must be an integer from 1 to 100"))?;
        PageSize::new(value)
    }
}

impl<'de> Deserialize<'de> for PageSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = crate::json_int::deserialize(deserializer)?;
        PageSize::new(value).map_err(|e| serde::de::Error::custom(e.reason))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(Name::parse("  Rex ").unwrap().as_str(), "Rex");
        assert!(Name::parse("").is_err());
        assert!(Name::parse("   ").is_err());
        assert!(Name::parse(&"a".repeat(100)).is_ok());
        assert!(Name::parse(&"a".repeat(101)).is_err());
        assert!(
            Name::parse(&format!(" {}", "a".repeat(100))).is_err(),
            "as sent"
        );
        // Characters, not bytes: 100 three-byte characters are fine.
        assert!(Name::parse(&"é".repeat(100)).is_ok());
        assert!(Name::parse("Re\u{0}x").is_err());
        assert!(Name::parse("Re\nx").is_err());
        assert_eq!(Name::parse("").unwrap_err().field, "name");
    }

    proptest::proptest! {
        /// Taking the text by value (rows read back, request bodies) judges exactly as
        /// parsing it does.
        #[test]
        fn a_name_taken_by_value_is_the_name_parsed(text in "\\PC{0,3}[ \\t\\n\\x00a-zé]{0,105}\\PC{0,3}") {
            let parsed = Name::parse(&text);
            let taken = Name::try_from(text.clone());
            proptest::prop_assert_eq!(parsed.as_ref().ok(), taken.as_ref().ok());
            proptest::prop_assert_eq!(parsed.err().map(|e| e.reason), taken.err().map(|e| e.reason));
        }

        /// The short ways `check` takes for ASCII judge as the rule reads: at most 100
        /// characters as sent, something left after trimming, no control character (C0, DEL
        /// or C1).
        #[test]
        fn a_name_is_judged_as_the_rule_reads(text in "[ \t\n\x00\x1fa-z\x7f\u{80}\u{9f}é😀]{0,104}") {
            let trimmed = text.trim();
            let valid = text.chars().count() <= Name::MAX_CHARS
                && !trimmed.is_empty()
                && !trimmed.chars().any(char::is_control);
            let parsed = Name::parse(&text);
            proptest::prop_assert_eq!(parsed.is_ok(), valid, "{:?}", text);
            if let Ok(name) = parsed {
                proptest::prop_assert_eq!(name.as_str(), trimmed);
            }
        }
    }

    #[test]
    fn descriptions_allow_line_breaks_but_not_other_controls() {
        assert!(Description::parse("").is_ok());
        assert!(Description::parse("line one\nline two\ttab").is_ok());
        assert!(Description::parse("bell\u{7}").is_err());
        assert!(Description::parse(&"d".repeat(1000)).is_ok());
        assert!(Description::parse(&"d".repeat(1001)).is_err());
    }

    #[test]
    fn quantity_is_one_to_a_thousand_defaulting_to_one() {
        assert!(Quantity::new(0).is_err());
        assert!(Quantity::new(-5).is_err());
        assert_eq!(Quantity::new(1).unwrap().get(), 1);
        assert_eq!(Quantity::new(1000).unwrap().get(), 1000);
        assert!(Quantity::new(1001).is_err());
        assert_eq!(Quantity::default(), Quantity::ONE);
        assert_eq!(serde_json::from_str::<Quantity>("3.0").unwrap().get(), 3);
        assert!(serde_json::from_str::<Quantity>("2.5").is_err());
    }

    #[test]
    fn settable_stock_is_zero_to_a_million() {
        assert!(Stock::settable(-1).is_err());
        assert_eq!(Stock::settable(0).unwrap(), Stock::ZERO);
        assert_eq!(Stock::settable(1_000_000).unwrap().get(), 1_000_000);
        assert!(Stock::settable(1_000_001).is_err());
    }

    #[test]
    fn stock_arithmetic_never_goes_negative() {
        let five = Stock::from_level(5);
        let three = Quantity::new(3).unwrap();
        assert_eq!(five.take(three), Some(Stock::from_level(2)));
        assert_eq!(Stock::from_level(2).take(three), None);
        assert_eq!(Stock::from_level(2).put_back(three), five);
    }

    #[test]
    fn page_size_is_one_to_a_hundred_defaulting_to_twenty() {
        assert_eq!(PageSize::default().get(), 20);
        assert!("0".parse::<PageSize>().is_err());
        assert_eq!("100".parse::<PageSize>().unwrap().get(), 100);
        assert!("101".parse::<PageSize>().is_err());
        assert!("-1".parse::<PageSize>().is_err());
        assert!("ten".parse::<PageSize>().is_err());
    }
}

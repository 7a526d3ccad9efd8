//! Integers as JSON Schema sees them.
//!
//! JSON Schema calls `5.0` an integer, and some clients (JavaScript ones, above all) send it
//! that way; serde's integer types reject it. Every integer field of the API goes through
//! [`deserialize`], which accepts any JSON number with no fractional part and rejects the rest.

use std::fmt;

use serde::Deserializer;
use serde::de::{self, Visitor};

/// Parses an integer written in a path or query string: digits, optionally followed by a
/// fraction of zeros (`5`, `5.0`, `5.00`), as JSON Schema counts `5.0` an integer. No sign, no
/// exponent, no spaces. `None` for anything else, or a value beyond `i64`.
pub(crate) fn parse_text(text: &str) -> Option<i64> {
    let whole = match text.split_once('.') {
        Some((whole, fraction)) if !fraction.is_empty() && fraction.bytes().all(|b| b == b'0') => {
            whole
        }
        Some(_) => return None,
        None => text,
    };
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    whole.parse().ok()
}

/// Deserializes an integer, accepting integral floats such as `5.0`.
pub(crate) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    deserializer.deserialize_any(IntegerVisitor)
}

struct IntegerVisitor;

impl Visitor<'_> for IntegerVisitor {
    type Value = i64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
        Ok(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
        i64::try_from(v).map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<i64, E> {
        // 2^63 is the first float past i64::MAX; everything below it with no fraction fits.
        const LIMIT: f64 = 9_223_372_036_854_775_808.0;
        if v.fract() == 0.0 && (-LIMIT..LIMIT).contains(&v) {
            #[allow(
                clippy::cast_possible_truncation,
                reason = "checked just above: integral and in range"
            )]
            Ok(v as i64)
        } else {
            Err(E::invalid_value(de::Unexpected::Float(v), &self))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Deserialize)]
    struct Holder {
        #[serde(deserialize_with = "super::deserialize")]
        n: i64,
    }

    fn parse(json: &str) -> Result<i64, String> {
        serde_json::from_str::<Holder>(json)
            .map(|h| h.n)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn text_integers_may_carry_a_zero_fraction() {
        assert_eq!(super::parse_text("42"), Some(42));
        assert_eq!(super::parse_text("42.0"), Some(42));
        assert_eq!(super::parse_text("42.000"), Some(42));
        for bad in [
            "",
            ".0",
            "42.",
            "42.5",
            "-1",
            "+1",
            "1e3",
            " 1",
            "4 2",
            "99999999999999999999",
        ] {
            assert_eq!(super::parse_text(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn accepts_integers_and_integral_floats() {
        assert_eq!(parse(r#"{"n": 5}"#), Ok(5));
        assert_eq!(parse(r#"{"n": -3}"#), Ok(-3));
        assert_eq!(parse(r#"{"n": 5.0}"#), Ok(5));
        assert_eq!(parse(r#"{"n": 1e3}"#), Ok(1000));
    }

    #[test]
    fn rejects_fractions_strings_and_huge_numbers() {
        assert!(parse(r#"{"n": 5.5}"#).is_err());
        assert!(parse(r#"{"n": "5"}"#).is_err());
        assert!(parse(r#"{"n": 1e300}"#).is_err());
        assert!(parse(r#"{"n": 18446744073709551615}"#).is_err());
        assert!(parse(r#"{"n": null}"#).is_err());
    }
}

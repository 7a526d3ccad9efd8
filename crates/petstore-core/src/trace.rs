//! The W3C Trace Context a change was made under, so the work it causes later (a webhook
//! delivery) continues the caller's trace.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A valid W3C Trace Context `traceparent` (`version-traceid-parentid-flags`), the header a
/// caller's tracing sends with a request.
///
/// A change records the one it was made under with its events. Where no spans are recorded,
/// that is the caller's value as it came (a "pass-through" participant in the
/// specification's words), so the receiver of a webhook sees its delivery as a child of the
/// request that caused it; a service exporting spans records its own request span instead.
/// Only version `00` is sent on; a later version's value is kept as its first four fields
/// under version `00`, which is what the specification asks of a participant that knows only
/// `00`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TraceParent(String);

/// The length of a version `00` value: `00-` + 32 + `-` + 16 + `-` + 2.
const LEN: usize = 55;

impl TraceParent {
    /// The value of a `traceparent` header, if valid; anything else is ignored, as the
    /// specification asks (`None`). Version `00` has exactly four fields; a later version may
    /// add more after them.
    pub fn parse(value: &str) -> Option<Self> {
        let hex = |text: &str, len: usize| {
            text.len() == len && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        };
        let nonzero = |text: &str| text.bytes().any(|b| b != b'0');
        let mut fields = value.split('-');
        let (version, trace, parent, flags) = (
            fields.next()?,
            fields.next()?,
            fields.next()?,
            fields.next()?,
        );
        let valid = hex(version, 2)
            && version != "ff"
            && (version != "00" || fields.next().is_none())
            && hex(trace, 32)
            && nonzero(trace)
            && hex(parent, 16)
            && nonzero(parent)
            && hex(flags, 2);
        valid.then(|| Self(format!("00-{trace}-{parent}-{flags}")))
    }

    /// The value to send on, always version `00`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The trace id: 32 lowercase hexadecimal digits, never all zero.
    pub fn trace_id(&self) -> &str {
        &self.0[3..35]
    }
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for TraceParent {
    type Error = String;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        match Self::parse(&value) {
            Some(parsed) if parsed.0.len() == LEN => Ok(parsed),
            _ => Err(format!("not a W3C traceparent: {value:?}")),
        }
    }
}

impl From<TraceParent> for String {
    fn from(value: TraceParent) -> Self {
        value.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

    #[test]
    fn a_valid_value_is_kept_and_gives_its_trace_id() {
        let value = format!("00-{TRACE}-00f067aa0ba902b7-01");
        let parsed = TraceParent::parse(&value).unwrap();
        assert_eq!(parsed.as_str(), value);
        assert_eq!(parsed.trace_id(), TRACE);
    }

    #[test]
    fn a_later_version_is_sent_on_as_version_00() {
        let parsed = TraceParent::parse(&format!("01-{TRACE}-00f067aa0ba902b7-01-future")).unwrap();
        assert_eq!(parsed.as_str(), format!("00-{TRACE}-00f067aa0ba902b7-01"));
        assert_eq!(parsed.trace_id(), TRACE);
    }

    #[test]
    fn invalid_values_are_ignored() {
        for bad in [
            format!("00-{TRACE}-00f067aa0ba902b7-01-extra"),
            format!("ff-{TRACE}-00f067aa0ba902b7-01"),
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01".to_owned(),
            format!("00-{TRACE}-0000000000000000-01"),
            format!("00-{}-00f067aa0ba902b7-01", TRACE.to_uppercase()),
            format!("00-{TRACE}-00f067aa0ba902b7"),
            format!("0-{TRACE}-00f067aa0ba902b7-01"),
            format!("00-{TRACE}-00f067aa0ba902b7-1"),
            String::new(),
        ] {
            assert_eq!(TraceParent::parse(&bad), None, "{bad}");
        }
    }

    #[test]
    fn serde_refuses_what_parse_refuses() {
        let value = serde_json::json!(format!("00-{TRACE}-00f067aa0ba902b7-01"));
        let parsed: TraceParent = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(serde_json::to_value(&parsed).unwrap(), value);
        assert!(serde_json::from_value::<TraceParent>(serde_json::json!("00-abc")).is_err());
    }

    proptest! {
        #[test]
        fn whatever_is_accepted_is_a_version_00_value_that_parses_to_itself(text in "[0-9a-f-]{0,70}") {
            if let Some(parsed) = TraceParent::parse(&text) {
                prop_assert_eq!(parsed.as_str().len(), LEN);
                prop_assert_eq!(TraceParent::parse(parsed.as_str()), Some(parsed.clone()));
            }
        }

        #[test]
        fn any_well_formed_value_is_accepted(
            trace in "[0-9a-f]{32}", parent in "[0-9a-f]{16}", flags in "[0-9a-f]{2}",
        ) {
            prop_assume!(trace.bytes().any(|b| b != b'0') && parent.bytes().any(|b| b != b'0'));
            let value = format!("00-{trace}-{parent}-{flags}");
            let parsed = TraceParent::parse(&value);
            prop_assert_eq!(parsed.as_ref().map(TraceParent::as_str), Some(value.as_str()));
            prop_assert_eq!(parsed.as_ref().map(TraceParent::trace_id), Some(trace.as_str()));
        }
    }
}

//! Holds: units of pets set aside for a basket while its shopper pays elsewhere, given back
//! when the hold is released or expires, or ordered when it is checked out.
//!
//! A hold takes its units out of `available` when it is placed (they are `held`), and ends
//! exactly once: by its owner or staff releasing it, by the sweeper once its expiry has
//! passed, or by a checkout that orders its units. Each ending is a committed change with its
//! ledger rows and events, made under the locks of the hold's pets; the clock decides only
//! when an expiry is due, never whether units are free (`docs/domain.md`, "Holds").

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::checkout::CheckoutLines;
use crate::ids::{HoldId, OrderId, OwnerId, PetId};
use crate::validation::ValidationError;
use crate::values::Quantity;

/// A hold to place: its lines (1 to 50, each pet once, as a checkout's) and how long it
/// lives.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewHold {
    /// 1 to 50 lines, each pet in one line only.
    #[cfg_attr(
        feature = "openapi",
        schema(value_type = Vec<crate::NewLine>, min_items = 1, max_items = 50)
    )]
    pub lines: CheckoutLines,
    /// Seconds until the hold expires: 1 to the operator's longest (`HoldLives::longest`);
    /// the operator's default when not given.
    #[serde(
        default,
        deserialize_with = "ttl_seconds",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 86400))]
    pub ttl_seconds: Option<u32>,
}

/// A hold's `ttlSeconds`: an integer (`7.0` too, as JSON Schema's integers are) from 1 to a
/// day, the most any operator may allow; `null` as if not given.
fn ttl_seconds<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<u32>, D::Error> {
    struct Seconds(u32);
    impl<'de> Deserialize<'de> for Seconds {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            let seconds = crate::json_int::deserialize(deserializer)?;
            u32::try_from(seconds)
                .ok()
                .filter(|&s| s >= 1 && u64::from(s) <= HoldLives::CEILING.as_secs())
                .map(Seconds)
                .ok_or_else(|| serde::de::Error::custom("must be an integer from 1 to 86400"))
        }
    }
    Ok(Option::<Seconds>::deserialize(deserializer)?.map(|seconds| seconds.0))
}

/// How long holds live: the operator's default and the longest a client may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HoldLives {
    /// The life of a hold whose request does not say (600 s unless the operator says).
    pub default: Duration,
    /// The longest life a request may ask for (1,800 s unless the operator says).
    pub longest: Duration,
}

impl HoldLives {
    /// The most any operator may allow: a day. A hold is a basket's, not a reservation's.
    pub const CEILING: Duration = Duration::from_secs(86_400);

    /// The lives, if `default` is within 1 s ..= `longest` ..= a day.
    pub fn new(default: Duration, longest: Duration) -> Result<Self, ValidationError> {
        if default < Duration::from_secs(1) || default > longest || longest > Self::CEILING {
            return Err(ValidationError::new(
                "hold life",
                "the default must be from 1 s to the longest, and the longest at most a day",
            ));
        }
        Ok(Self { default, longest })
    }

    /// The life a request asks for (`ttl_seconds`), or the default; `None` when it asks for
    /// none of 1 s to the longest (`HoldTooLong`: a rule of this shop, which the schema's
    /// bounds, 1 s to a day, cannot state).
    pub fn life_of(&self, ttl_seconds: Option<u32>) -> Option<Duration> {
        let Some(seconds) = ttl_seconds else {
            return Some(self.default);
        };
        let life = Duration::from_secs(u64::from(seconds));
        (seconds > 0 && life <= self.longest).then_some(life)
    }
}

impl Default for HoldLives {
    fn default() -> Self {
        Self {
            default: Duration::from_secs(600),
            longest: Duration::from_secs(1800),
        }
    }
}

/// A line of a hold: units of one pet.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HoldLine {
    /// Its place in the hold, from 1; a checkout of the hold gives its order's line the same.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 50))]
    pub line_no: u16,
    /// The pet.
    pub pet_id: PetId,
    /// How many units are set aside.
    pub quantity: Quantity,
}

/// How a hold ended.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HoldEnd {
    /// Its owner or staff released it: the units went back.
    Released,
    /// Its expiry passed: the units went back.
    Expired,
    /// It was checked out: the units are its order's.
    Consumed,
}

impl HoldEnd {
    /// Every ending.
    pub const ALL: [HoldEnd; 3] = [HoldEnd::Released, HoldEnd::Expired, HoldEnd::Consumed];

    /// Its name, as the API and the stores write it.
    pub const fn as_str(self) -> &'static str {
        match self {
            HoldEnd::Released => "released",
            HoldEnd::Expired => "expired",
            HoldEnd::Consumed => "consumed",
        }
    }

    /// The ending named `text`, if any.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|end| end.as_str() == text)
    }
}

/// A hold that ended: how, when, and the order it became.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ending {
    /// How.
    pub how: HoldEnd,
    /// When.
    pub at: DateTime<Utc>,
    /// The order its units became, when it was checked out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub order_id: Option<OrderId>,
}

/// A hold: units set aside until it expires, unless it ends before.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hold {
    /// Its id, given by the store.
    pub id: HoldId,
    /// Its lines, numbered from 1.
    pub lines: Vec<HoldLine>,
    /// When it was placed.
    pub created_at: DateTime<Utc>,
    /// When it expires, unless it ended before.
    pub expires_at: DateTime<Utc>,
    /// How it ended; absent while it is active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub ended: Option<Ending>,
    /// Who placed it, when known. Not part of the JSON shape: it decides who may see the
    /// hold, as an order's owner does.
    #[serde(skip)]
    pub owner: Option<OwnerId>,
}

impl Hold {
    /// Whether it is active (not ended) and its expiry has not come at `now`: only then can
    /// it be checked out.
    pub fn usable_at(&self, now: DateTime<Utc>) -> bool {
        self.ended.is_none() && now < self.expires_at
    }

    /// Whether it is active and its expiry has come at `now`: the sweeper ends it.
    pub fn due_at(&self, now: DateTime<Utc>) -> bool {
        self.ended.is_none() && now >= self.expires_at
    }
}

/// A hold as the use case hands it to a store to be given an id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacedHold {
    /// Its lines, numbered from 1.
    pub lines: Vec<HoldLine>,
    /// When it was placed.
    pub created_at: DateTime<Utc>,
    /// When it expires.
    pub expires_at: DateTime<Utc>,
    /// Who placed it.
    pub owner: Option<OwnerId>,
}

impl PlacedHold {
    /// The active hold this is once a store has given it `id`.
    pub fn into_hold(self, id: HoldId) -> Hold {
        let Self {
            lines,
            created_at,
            expires_at,
            owner,
        } = self;
        Hold {
            id,
            lines,
            created_at,
            expires_at,
            ended: None,
            owner,
        }
    }
}

/// How many holds are active, the units they set aside, and the oldest expiry not yet
/// acted on: what operators watch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeldTotals {
    /// Active holds.
    pub holds: u64,
    /// The units they set aside.
    pub units: u64,
    /// The earliest expiry among active holds whose expiry has come, if any: the sweepers
    /// end such a hold within their interval and a second.
    pub oldest_due: Option<DateTime<Utc>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ttl(body: &str) -> Result<Option<u32>, serde_json::Error> {
        let text = format!(r#"{{"lines": [{{"petId": 1}}]{body}}}"#);
        serde_json::from_str::<NewHold>(&text).map(|hold| hold.ttl_seconds)
    }

    #[test]
    fn a_life_is_an_integer_from_a_second_to_a_day() {
        assert_eq!(ttl("").unwrap(), None);
        assert_eq!(ttl(r#", "ttlSeconds": null"#).unwrap(), None);
        assert_eq!(ttl(r#", "ttlSeconds": 7"#).unwrap(), Some(7));
        assert_eq!(
            ttl(r#", "ttlSeconds": 7.0"#).unwrap(),
            Some(7),
            "JSON Schema's integer"
        );
        assert_eq!(ttl(r#", "ttlSeconds": 86400"#).unwrap(), Some(86_400));
        for bad in ["0", "86401", "-1", "1.5", "\"7\""] {
            assert!(ttl(&format!(r#", "ttlSeconds": {bad}"#)).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_operators_longest_is_a_rule_of_the_shop() {
        let lives = HoldLives::default();
        assert_eq!(lives.life_of(None), Some(Duration::from_secs(600)));
        assert_eq!(lives.life_of(Some(1800)), Some(Duration::from_secs(1800)));
        assert_eq!(
            lives.life_of(Some(1801)),
            None,
            "the use case: hold_too_long"
        );
        assert_eq!(lives.life_of(Some(0)), None);
        assert!(HoldLives::new(Duration::from_secs(700), Duration::from_secs(600)).is_err());
    }
}

//! How fresh a read must be, as a client asks on the wire, and the token a write's answer
//! gives for it (`docs/api.md`, "Reading your writes").
//!
//! - A read with neither header sees every write acknowledged before it was sent, on any
//!   node ([`Freshness::Latest`]).
//! - `Consistency-Token: <token>`, as a write's answer gave it (on any node): the read sees
//!   that write and every one before it ([`Freshness::Since`]).
//! - `Max-Staleness: <seconds>`: the read sees every write acknowledged at least that long
//!   before it was sent ([`Freshness::Within`]).
//!
//! The request's wish is kept in its context (`context.rs`), where
//! [`AppState::read`](crate::state::AppState::read) finds it, and where a write's answer
//! leaves its token for the response; so no handler passes either along. The feed and its
//! stream read the primary whatever the request asks (`AppState::read_primary`).

use std::time::Duration;

use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};
use petstore_store::{Freshness, Position};

use crate::error::ApiError;

/// `Consistency-Token`: on a write's answer, the position its commit reached; on a read,
/// the position it must see.
pub const CONSISTENCY_TOKEN: HeaderName = HeaderName::from_static("consistency-token");

/// `Max-Staleness`: the seconds a read accepts to be behind.
pub const MAX_STALENESS: HeaderName = HeaderName::from_static("max-staleness");

/// The largest `Max-Staleness` accepted: a day.
pub const MAX_STALENESS_SECONDS: u64 = 86_400;

/// The pattern of a consistency token: `<timeline>/<position in hex>`.
pub const TOKEN_PATTERN: &str = "^[0-9]{1,9}/[0-9A-Fa-f]{1,16}$";

/// The freshness `headers` ask for: refused when any value of either header is not of its
/// form. Both sent together ask for a state that meets both: the latest does.
pub fn asked(headers: &HeaderMap) -> Result<Freshness, ApiError> {
    // One pass over the request's few headers costs less than a hashed lookup of each name,
    // and every `/v1` request asks.
    let (mut token, mut staleness) = (None, None);
    for (name, value) in headers {
        if *name == CONSISTENCY_TOKEN {
            token = Some(token_of(value)?);
        } else if *name == MAX_STALENESS {
            staleness = Some(staleness_of(value)?);
        }
    }
    Ok(match (token, staleness) {
        (None, None) | (Some(_), Some(_)) => Freshness::Latest,
        (Some(token), None) => token,
        (None, Some(staleness)) => staleness,
    })
}

fn token_of(token: &HeaderValue) -> Result<Freshness, ApiError> {
    token
        .to_str()
        .ok()
        .and_then(|text| text.trim().parse::<Position>().ok())
        .map(Freshness::Since)
        .ok_or_else(|| {
            ApiError::invalid_parameter(
                "Consistency-Token is `<timeline>/<position in hex>`, as a write's answer gave it",
            )
        })
}

fn staleness_of(seconds: &HeaderValue) -> Result<Freshness, ApiError> {
    seconds
        .to_str()
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok())
        .filter(|seconds| *seconds <= MAX_STALENESS_SECONDS)
        .map(|seconds| Freshness::Within(Duration::from_secs(seconds)))
        .ok_or_else(|| {
            ApiError::invalid_parameter(format!(
                "Max-Staleness is a whole number of seconds from 0 to {MAX_STALENESS_SECONDS}"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert((*name).clone(), HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn a_read_asks_for_the_latest_unless_it_says_otherwise() {
        assert_eq!(asked(&headers(&[])).unwrap(), Freshness::Latest);
        assert_eq!(
            asked(&headers(&[(&CONSISTENCY_TOKEN, "2/3000A28")])).unwrap(),
            Freshness::Since(Position {
                timeline: 2,
                lsn: 0x300_0A28
            })
        );
        assert_eq!(
            asked(&headers(&[(&MAX_STALENESS, "5")])).unwrap(),
            Freshness::Within(Duration::from_secs(5))
        );
    }

    #[test]
    fn both_together_ask_for_the_latest() {
        assert_eq!(
            asked(&headers(&[
                (&CONSISTENCY_TOKEN, "1/1"),
                (&MAX_STALENESS, "1")
            ]))
            .unwrap(),
            Freshness::Latest
        );
    }

    #[test]
    fn every_token_of_the_documented_pattern_is_taken() {
        for token in ["999999999/FFFFFFFFFFFFFFFF", "0/0", "1/a"] {
            assert!(
                asked(&headers(&[(&CONSISTENCY_TOKEN, token)])).is_ok(),
                "{token}"
            );
        }
    }

    #[test]
    fn bad_headers_are_refused() {
        for bad in [
            headers(&[(&CONSISTENCY_TOKEN, "yesterday")]),
            headers(&[(&MAX_STALENESS, "-1")]),
            headers(&[(&MAX_STALENESS, "1.5")]),
            headers(&[(&MAX_STALENESS, "86401")]),
            headers(&[(&CONSISTENCY_TOKEN, "1/1"), (&MAX_STALENESS, "x")]),
        ] {
            let refused = asked(&bad).unwrap_err();
            assert_eq!(refused.code(), crate::error::ErrorCode::InvalidParameter);
        }
    }
}

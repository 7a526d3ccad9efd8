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
//! The request's wish is kept for the request's task ([`within`]), where
//! [`AppState::read`](crate::state::AppState::read) finds it, and where a write's answer
//! leaves its token for the response; so no handler passes either along. The feed and its
//! stream read the primary whatever the request asks (`AppState::read_primary`).

use std::cell::Cell;
use std::time::Duration;

use actix_web::dev::ServiceResponse;
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

/// What one request asked of its reads, and the token its writes reached.
struct RequestConsistency {
    wants: Freshness,
    /// The latest position its writes reached; `None` once a write's is unknown.
    token: Cell<Option<Position>>,
    /// Whether any write of it was answered yet.
    wrote: Cell<bool>,
}

impl RequestConsistency {
    fn new(wants: Freshness) -> Self {
        Self {
            wants,
            token: Cell::new(None),
            wrote: Cell::new(false),
        }
    }
}

tokio::task_local! {
    static REQUEST: RequestConsistency;
}

/// What the request being served asked of its reads; the default outside a request.
pub fn requested() -> Freshness {
    REQUEST
        .try_with(|request| request.wants)
        .unwrap_or_default()
}

/// Notes that a write of the request being served was answered, with `token` the position
/// its commit reached, if known: the response carries the latest, and none once one write's
/// is unknown (a token short of a write would let a read miss it).
pub fn written(token: Option<Position>) {
    let _ = REQUEST.try_with(|request| {
        let kept = match (request.wrote.replace(true), request.token.get()) {
            (false, _) => token,
            (true, None) => None,
            (true, Some(kept)) => token.map(|token| token.max(kept)),
        };
        request.token.set(kept);
    });
}

/// The pattern of a consistency token: `<timeline>/<position in hex>`.
pub const TOKEN_PATTERN: &str = "^[0-9]{1,9}/[0-9A-Fa-f]{1,16}$";

/// The freshness `headers` ask for: refused when a header is not of its form. Both sent
/// together ask for a state that meets both: the latest does.
pub fn asked(headers: &HeaderMap) -> Result<Freshness, ApiError> {
    let token = headers.get(CONSISTENCY_TOKEN).map(token_of).transpose()?;
    let staleness = headers.get(MAX_STALENESS).map(staleness_of).transpose()?;
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

/// Runs `serve`, the request's handling, with `wants` ([`asked`] of its headers) kept for
/// its task, and gives a successful answer the token its writes reached (a node without read
/// standbys gives none: its reads are never behind). Called by `authenticate`, the one layer
/// every `/v1` request crosses, rather than as a layer of its own (each costs a boxed future
/// per request).
pub async fn within<B>(
    wants: Freshness,
    serve: impl Future<Output = Result<ServiceResponse<B>, actix_web::Error>>,
) -> Result<ServiceResponse<B>, actix_web::Error> {
    let request = RequestConsistency::new(wants);
    let (response, token) = REQUEST
        .scope(request, async move {
            let response = serve.await;
            (response, REQUEST.with(|request| request.token.get()))
        })
        .await;
    let mut response = response?;
    if let Some(token) = token.filter(|_| response.status().is_success())
        && let Ok(value) = HeaderValue::from_str(&token.to_string())
    {
        response.headers_mut().insert(CONSISTENCY_TOKEN, value);
    }
    Ok(response)
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

    #[actix_web::test]
    async fn a_request_keeps_the_latest_token_its_writes_reached() {
        let at = |lsn| Position { timeline: 1, lsn };
        let kept = REQUEST
            .scope(RequestConsistency::new(Freshness::Latest), async move {
                written(Some(at(9)));
                written(Some(at(5)));
                REQUEST.with(|request| request.token.get())
            })
            .await;
        assert_eq!(kept, Some(at(9)));
        let kept = REQUEST
            .scope(RequestConsistency::new(Freshness::Latest), async move {
                written(Some(at(9)));
                written(None);
                written(Some(at(12)));
                REQUEST.with(|request| request.token.get())
            })
            .await;
        assert_eq!(kept, None, "one write's position unknown: no token");
        // Outside a request: nothing to keep, and the default asked.
        written(Some(Position {
            timeline: 1,
            lsn: 1,
        }));
        assert_eq!(requested(), Freshness::Latest);
    }
}

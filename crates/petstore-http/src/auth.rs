//! Authentication and authorization, in one place (the rate limit it applies is
//! `rate_limit.rs`; the cache of verified keys, `state/key_cache.rs`).
//!
//! The [`authenticate`] middleware (on the `/v1` scope) resolves the bearer key once per
//! request, applies the rate limit (per key; per client address when no valid key was given)
//! and leaves what it found in the request. The [`Auth`] extractor, the first argument of every
//! `/v1` handler, turns that into 401 or 403 according to the [`Requirement`] in the handler's
//! signature; the requirement's permission is checked against the domain's one policy table,
//! `Role::grants`.

use std::future::{Ready, ready};
use std::marker::PhantomData;
use std::sync::Arc;

use actix_web::body::MessageBody;
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{Error, FromRequest, HttpMessage, HttpRequest, web};
use futures_util::future::Either;
use petstore_core::{ApiKey, Caller, Door, KeyId, KeySecret, Permission};

use crate::consistency;
use crate::context;
use crate::error::{ApiError, ErrorCode};
use crate::metrics::Metrics;
use crate::rate_limit::Bucket;
pub use crate::rate_limit::RateLimits;
use crate::state::AppState;
pub use crate::state::KeyCache;

/// What the middleware found about the caller.
#[derive(Debug, Clone, Copy)]
enum Authentication {
    /// No `Authorization` header.
    Missing,
    /// A header, but not a known, unrevoked key.
    Invalid,
    /// A valid key.
    Valid(Caller),
}

/// The token of the `Authorization: Bearer` header, as sent: `None` without the header, `Err`
/// when it is not a bearer token. Its form is checked by [`secret_of`].
fn bearer_token(headers: &HeaderMap) -> Result<Option<&[u8]>, ()> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let text = value.as_bytes();
    let space = text.iter().position(|&b| b == b' ').ok_or(())?;
    let (scheme, token) = (&text[..space], &text[space + 1..]);
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return Err(());
    }
    Ok(Some(token.trim_ascii()))
}

/// The secret a bearer token presents, if it has a secret's form.
fn secret_of(token: &[u8]) -> Result<KeySecret, ()> {
    let text = std::str::from_utf8(token).map_err(|_| ())?;
    KeySecret::parse(text).map_err(|_| ())
}

/// Resolves the caller's key, applies the rate limit, and marks every answer `no-store`
/// (answers to authenticated requests must not sit in shared caches); all of it, the key's
/// read included, as fresh as the request asks its reads to be ([`context::within`]).
pub fn authenticate(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> impl Future<Output = Result<ServiceResponse<impl MessageBody>, Error>> {
    // Not an async fn: one would keep `req` and `next` beside the future it awaits, and actix
    // boxes this future, twice its size, for every request (`context::within`).
    // A consistency header of the wrong form is refused before the key is looked at.
    match consistency::asked(req.headers()) {
        Ok(wants) => {
            let origin = context::Origin::of(&req);
            Either::Left(context::within(
                Door::Api,
                wants,
                origin,
                authenticated(req, next),
            ))
        }
        Err(refused) => Either::Right(ready(Err(refused.into()))),
    }
}

async fn authenticated(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let state = req
        .app_data::<web::Data<AppState>>()
        .cloned()
        .ok_or_else(ApiError::internal)?;
    // The cache is asked first, with the token as sent: only the tokens of keys found valid
    // are in it, so a hit needs no check of the token's form, nor a copy of it.
    let presented = bearer_token(req.headers())
        .map(|token| token.map(|token| (state.key_cache().slot(token), token)));
    let holder = match presented {
        Ok(None) => Err(Authentication::Missing),
        Err(()) => Err(Authentication::Invalid),
        Ok(Some((slot, token))) => match state.key_cache().get(slot) {
            Some(holder) => Ok(holder),
            None => match secret_of(token) {
                Err(()) => Err(Authentication::Invalid),
                // Boxed: only a key the cache does not hold waits for the store, and the
                // future every request keeps would otherwise hold room for that wait.
                Ok(secret) => {
                    match Box::pin(state.read(move |shop| shop.keys().identify(&secret))).await? {
                        Some(holder) => {
                            let holder = Arc::new(holder);
                            state.key_cache().put(slot, Arc::clone(&holder));
                            Ok(holder)
                        }
                        None => Err(Authentication::Invalid),
                    }
                }
            },
        },
    };
    let authentication = match holder {
        Ok(holder) => {
            let caller = holder.caller;
            context::identified(holder);
            Authentication::Valid(caller)
        }
        Err(refused) => refused,
    };
    let bucket = match authentication {
        Authentication::Valid(Caller::Key { id, .. }) => Bucket::Key(id),
        _ => Bucket::address(req.peer_addr()),
    };
    let rate_headers = take_rate(req.app_data::<RateLimits>(), state.metrics(), &bucket)?;
    req.extensions_mut().insert(authentication);

    let mut response = next.call(req).await?;
    let headers = response.headers_mut();
    for (name, value) in rate_headers.into_iter().flatten() {
        headers.insert(name, value);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// Takes one request from `bucket` of the limiter, where the app has one: the headers its
/// answer carries, or the 429 refusal (counted in the metrics). Both doors take from it: the
/// API here, the console's sign-in and changes (`console/session.rs`).
pub(crate) fn take_rate(
    limits: Option<&RateLimits>,
    metrics: &Metrics,
    bucket: &Bucket,
) -> Result<Option<[(HeaderName, HeaderValue); 2]>, ApiError> {
    let Some(limits) = limits else {
        return Ok(None);
    };
    limits
        .take(bucket)
        .map(Some)
        .inspect_err(|_| metrics.rate_limited())
}

/// Who made a change, as the log names them: `key 12`, or `operator` (the command line).
struct By(Caller);

impl std::fmt::Display for By {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.key() {
            Some(key) => write!(f, "key {key}"),
            None => f.write_str("operator"),
        }
    }
}

/// Logs a key made, and by whom, whichever door it came through (the API, the console, the
/// command line): keys are who may do what, so each change of them is on the record.
pub(crate) fn log_key_created(key: &ApiKey, by: Caller) {
    tracing::info!(key_id = %key.id, role = %key.role, by = %By(by), "key created");
}

/// Logs a key revoked, and by whom (see [`log_key_created`]).
pub(crate) fn log_key_revoked(id: KeyId, by: Caller) {
    tracing::info!(key_id = %id, by = %By(by), "key revoked");
}

/// What follows a key's revocation on the node that made it, through either door: the log
/// line, and the cache of verified keys emptied, so the key stops working now rather than
/// when its entry runs out (other nodes' watchers see the revocation: `changes.rs`).
pub(crate) fn key_revoked(state: &AppState, id: KeyId, by: Caller) {
    log_key_revoked(id, by);
    state.key_cache().clear();
}

/// What an operation requires of its caller, named in the handler's signature:
/// `Auth<AnyKey>`, `Auth<StaffOnly>`, `Auth<AdminOnly>`.
pub trait Requirement {
    /// The permission the caller's role must grant.
    const PERMISSION: Permission;
}

/// Any valid key (read the catalogue, shop).
#[derive(Debug)]
pub struct AnyKey;
impl Requirement for AnyKey {
    const PERMISSION: Permission = Permission::Shop;
}

/// Staff or admin (change the catalogue and inventory, manage every order).
#[derive(Debug)]
pub struct StaffOnly;
impl Requirement for StaffOnly {
    const PERMISSION: Permission = Permission::ManageStore;
}

/// Admin (manage keys).
#[derive(Debug)]
pub struct AdminOnly;
impl Requirement for AdminOnly {
    const PERMISSION: Permission = Permission::Administer;
}

/// The authenticated caller of an operation that requires `R`; extracting it answers 401
/// (no key, or not a valid one) or 403 (a valid key whose role is not enough).
#[derive(Debug)]
pub struct Auth<R>(pub Caller, PhantomData<R>);

/// 401 `unauthorized`, with the challenge the contract asks for.
pub fn unauthorized(message: &str) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized, message)
        .with_header(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"))
}

impl<R: Requirement> FromRequest for Auth<R> {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let found = req.extensions().get::<Authentication>().copied();
        ready(match found {
            // The domain's rule decides, as it does again inside the use case: refusing here
            // only spares the request the parsing and the trip to the store.
            Some(Authentication::Valid(caller)) => caller
                .require(R::PERMISSION)
                .map(|()| Auth(caller, PhantomData))
                .map_err(ApiError::from),
            Some(Authentication::Invalid) => Err(unauthorized(
                "the API key is not valid (unknown, revoked or malformed)",
            )),
            Some(Authentication::Missing) | None => Err(unauthorized(
                "pass your API key as a Bearer token in the Authorization header",
            )),
        })
    }
}

/// A new key's secret, from the operating system's random generator.
pub fn generate_secret() -> Result<KeySecret, ApiError> {
    random_bytes().map(KeySecret::from_random)
}

/// 32 bytes from the operating system's random generator, for secrets.
pub fn random_bytes() -> Result<[u8; 32], ApiError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|error| {
        tracing::error!(%error, "the OS random generator failed");
        ApiError::internal()
    })?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers_with(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        headers
    }

    fn bearer_secret(headers: &HeaderMap) -> Result<Option<KeySecret>, ()> {
        bearer_token(headers)?.map(secret_of).transpose()
    }

    #[test]
    fn only_well_formed_bearer_tokens_are_read() {
        let key = format!("pst_{}", "a".repeat(64));
        assert_eq!(
            bearer_secret(&headers_with(&format!("Bearer  {key} ")))
                .unwrap()
                .unwrap()
                .reveal(),
            key,
            "white space around the token is not part of it"
        );
        assert!(bearer_secret(&HeaderMap::new()).unwrap().is_none());
        assert!(
            bearer_secret(&headers_with(&format!("Bearer {key}")))
                .unwrap()
                .is_some()
        );
        assert!(
            bearer_secret(&headers_with(&format!("bearer {key}")))
                .unwrap()
                .is_some()
        );
        for bad in [
            key.clone(),
            format!("Basic {key}"),
            "Bearer short".to_owned(),
            "Bearer".to_owned(),
            format!("Bearer {key}é"),
        ] {
            assert!(bearer_secret(&headers_with(&bad)).is_err(), "{bad}");
        }
    }
}

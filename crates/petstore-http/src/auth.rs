//! Authentication, authorization and rate limiting, in one place.
//!
//! The [`authenticate`] middleware (on the `/v1` scope) resolves the bearer key once per
//! request, applies the rate limit (per key; per client address when no valid key was given)
//! and leaves what it found in the request. The [`Auth`] extractor, the first argument of every
//! `/v1` handler, turns that into 401 or 403 according to the [`Requirement`] in the handler's
//! signature; the requirement's permission is checked against the domain's one policy table,
//! `Role::grants`.

use std::collections::HashMap;
use std::future::{Ready, ready};
use std::hash::{BuildHasher, Hasher};
use std::marker::PhantomData;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use actix_web::body::MessageBody;
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{Error, FromRequest, HttpMessage, HttpRequest, web};
use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::{DefaultKeyedRateLimiter, Quota};
use petstore_core::{Caller, KeyId, KeySecret, Permission};
use siphasher::sip128::{Hasher128, SipHasher13};

use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;

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

/// Who a rate-limit bucket belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Bucket {
    Key(KeyId),
    Address(Option<IpAddr>),
}

/// The rate limiter and its policy, shared by all workers.
#[derive(Clone)]
pub struct RateLimits {
    limiter: Arc<DefaultKeyedRateLimiter<Bucket, StateInformationMiddleware>>,
    per_second: NonZeroU32,
    burst: NonZeroU32,
    /// `RateLimit-Policy`, the same on every answer: made once.
    policy: HeaderValue,
    /// Requests taken so far (wrapping): when to count the buckets.
    taken: Arc<AtomicU32>,
}

impl std::fmt::Debug for RateLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimits")
            .field("per_second", &self.per_second)
            .field("burst", &self.burst)
            .finish_non_exhaustive()
    }
}

/// Buckets kept before idle ones are dropped, so a flood of addresses cannot grow memory
/// without bound.
const MAX_BUCKETS: usize = 10_000;

/// Requests between two counts of the buckets (see [`RateLimits::take`]).
const PRUNE_EVERY: u32 = 256;

/// `RateLimit: "per-node";r={remaining};t={reset}`, written without `fmt` (every answer
/// carries one).
fn current_header(remaining: u32, reset: u64) -> HeaderValue {
    let mut numbers = (itoa::Buffer::new(), itoa::Buffer::new());
    let (remaining, reset) = (numbers.0.format(remaining), numbers.1.format(reset));
    let mut text = Vec::with_capacity(16 + remaining.len() + reset.len());
    text.extend_from_slice(b"\"per-node\";r=");
    text.extend_from_slice(remaining.as_bytes());
    text.extend_from_slice(b";t=");
    text.extend_from_slice(reset.as_bytes());
    HeaderValue::from_maybe_shared(actix_web::web::Bytes::from(text))
        .unwrap_or_else(|_| HeaderValue::from_static(""))
}

impl RateLimits {
    /// `per_second` requests a second per key or address, with bursts of up to `burst`.
    pub fn new(per_second: NonZeroU32, burst: NonZeroU32) -> Self {
        let quota = Quota::per_second(per_second).allow_burst(burst);
        Self {
            limiter: Arc::new(
                governor::RateLimiter::keyed(quota).with_middleware::<StateInformationMiddleware>(),
            ),
            per_second,
            burst,
            policy: Self::policy(per_second, burst),
            taken: Arc::default(),
        }
    }

    /// `RateLimit-Policy`: the quota over the window that refills it. The policy is named
    /// `per-node`: each node counts on its own (docs/deployment.md), so a client spread over
    /// N nodes by a balancer may make up to N times the quota, and the headers say what this
    /// node will still take.
    fn policy(per_second: NonZeroU32, burst: NonZeroU32) -> HeaderValue {
        let window = burst.get().div_ceil(per_second.get());
        HeaderValue::try_from(format!("\"per-node\";q={burst};w={window}"))
            .unwrap_or_else(|_| HeaderValue::from_static("\"per-node\""))
    }

    /// Takes one request from `bucket`: the headers to send, or the refusal.
    fn take(&self, bucket: &Bucket) -> Result<[(HeaderName, HeaderValue); 2], ApiError> {
        // Counting the buckets takes a lock per shard of the map, so it is counted once every
        // PRUNE_EVERY requests: between two counts it grows by at most that many.
        if self
            .taken
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(PRUNE_EVERY)
            && self.limiter.len() > MAX_BUCKETS
        {
            self.limiter.retain_recent();
        }
        let policy = (
            HeaderName::from_static("ratelimit-policy"),
            self.policy.clone(),
        );
        let current = |remaining: u32, reset: u64| {
            (
                HeaderName::from_static("ratelimit"),
                current_header(remaining, reset),
            )
        };
        match self.limiter.check_key(bucket) {
            Ok(state) => {
                let remaining = state.remaining_burst_capacity();
                let used = self.burst.get() - remaining;
                let reset = used.div_ceil(self.per_second.get());
                Ok([policy, current(remaining, u64::from(reset))])
            }
            Err(not_until) => {
                let seconds =
                    whole_seconds(not_until.wait_time_from(DefaultClock::default().now()));
                let mut error = ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    ErrorCode::RateLimited,
                    format!("too many requests; retry in {seconds} s"),
                )
                .with_header(header::RETRY_AFTER, HeaderValue::from(seconds));
                for (name, value) in [policy, current(0, seconds)] {
                    error = error.with_header(name, value);
                }
                Err(error)
            }
        }
    }
}

/// Verified keys, remembered briefly so that a request does not pay a database read to
/// authenticate. Entries are keyed by a keyed 128-bit SipHash of the secret, with keys drawn
/// at random when the process starts (the secret itself is not kept): without those keys
/// nobody can make a secret that lands on a remembered one, and it costs a few hundred
/// instructions where the stored SHA-256 cost a few thousand (docs/performance.md). Entries
/// live [`KeyCache::TTL`] and are all dropped when any key is revoked through the API. A key
/// revoked by another process (`petstore keys revoke`) stops working within the TTL.
#[derive(Debug)]
pub struct KeyCache {
    hash_keys: (u64, u64),
    entries: Mutex<HashMap<u128, (Caller, Instant)>>,
}

impl Default for KeyCache {
    fn default() -> Self {
        // RandomState is seeded from the operating system's generator: its hashes of fixed
        // inputs are keys nobody outside the process can know.
        let seed = std::hash::RandomState::new();
        Self {
            hash_keys: (seed.hash_one(0_u8), seed.hash_one(1_u8)),
            entries: Mutex::default(),
        }
    }
}

impl KeyCache {
    /// How long a verified key is trusted without asking the database again.
    pub const TTL: Duration = Duration::from_secs(5);
    /// Entries kept at most; past it the cache starts afresh.
    const CAPACITY: usize = 10_000;

    /// Where the key of `token` (a secret as sent) is remembered.
    fn slot(&self, token: &[u8]) -> u128 {
        let mut hasher = SipHasher13::new_with_keys(self.hash_keys.0, self.hash_keys.1);
        hasher.write(token);
        hasher.finish128().as_u128()
    }

    fn get(&self, slot: u128) -> Option<Caller> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries
            .get(&slot)
            .filter(|(_, at)| at.elapsed() < Self::TTL)
            .map(|(caller, _)| *caller)
    }

    fn put(&self, slot: u128, caller: Caller) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= Self::CAPACITY {
            entries.clear();
        }
        entries.insert(slot, (caller, Instant::now()));
    }

    /// Forgets every verified key (a key was revoked).
    pub fn clear(&self) {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
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
/// (answers to authenticated requests must not sit in shared caches).
pub async fn authenticate(
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
    let authentication = match presented {
        Ok(None) => Authentication::Missing,
        Err(()) => Authentication::Invalid,
        Ok(Some((slot, token))) => match state.key_cache().get(slot) {
            Some(caller) => Authentication::Valid(caller),
            None => match secret_of(token) {
                Err(()) => Authentication::Invalid,
                Ok(secret) => match state
                    .read(move |shop| shop.keys().authenticate(&secret))
                    .await?
                {
                    Some(caller) => {
                        state.key_cache().put(slot, caller);
                        Authentication::Valid(caller)
                    }
                    None => Authentication::Invalid,
                },
            },
        },
    };
    let bucket = match authentication {
        Authentication::Valid(Caller::Key { id, .. }) => Bucket::Key(id),
        _ => Bucket::Address(req.peer_addr().map(|addr| addr.ip())),
    };
    let rate_headers = match req
        .app_data::<RateLimits>()
        .map(|limits| limits.take(&bucket))
    {
        Some(Ok(headers)) => Some(headers),
        Some(Err(refusal)) => {
            state.metrics().rate_limited();
            return Err(refusal.into());
        }
        None => None,
    };
    req.extensions_mut().insert(authentication);

    let mut response = next.call(req).await?;
    let headers = response.headers_mut();
    for (name, value) in rate_headers.into_iter().flatten() {
        headers.insert(name, value);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
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

/// A wait in whole seconds, rounded up: a client told to wait 0 s would retry too soon.
fn whole_seconds(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
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

    #[test]
    fn the_limiter_counts_down_then_refuses_with_retry_after() {
        let limits = RateLimits::new(NonZeroU32::new(1).unwrap(), NonZeroU32::new(2).unwrap());
        let bucket = Bucket::Key(KeyId::new(1).unwrap());
        let first = limits.take(&bucket).unwrap();
        assert_eq!(first[0].1, "\"per-node\";q=2;w=2");
        assert_eq!(first[1].1, "\"per-node\";r=1;t=1");
        assert_eq!(limits.take(&bucket).unwrap()[1].1, "\"per-node\";r=0;t=2");
        let refused = limits.take(&bucket).unwrap_err();
        assert_eq!(refused.code(), ErrorCode::RateLimited);
        // Another bucket is not affected.
        assert!(limits.take(&Bucket::Address(None)).is_ok());
        assert_eq!(whole_seconds(Duration::from_millis(1500)), 2);
    }
}

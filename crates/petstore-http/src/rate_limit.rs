//! The rate limit: a token bucket per key (per client address without a valid key), counted
//! by each node on its own, with the `RateLimit-Policy` and `RateLimit` headers of every
//! answer. Authentication (`auth.rs`) takes from the caller's bucket.

use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderName, HeaderValue};
use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::{DefaultKeyedRateLimiter, Quota};
use petstore_core::KeyId;

use crate::error::{ApiError, ErrorCode};

/// Who a rate-limit bucket belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Bucket {
    /// A valid key's.
    Key(KeyId),
    /// A client address's, for requests without a valid key.
    Address(Option<IpAddr>),
}

impl Bucket {
    /// The bucket of the client at `peer` (its address; none behind a socket without one).
    pub(crate) fn address(peer: Option<SocketAddr>) -> Self {
        Bucket::Address(peer.map(|addr| addr.ip()))
    }
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
    pub(crate) fn take(&self, bucket: &Bucket) -> Result<[(HeaderName, HeaderValue); 2], ApiError> {
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

/// A wait in whole seconds, rounded up: a client told to wait 0 s would retry too soon.
fn whole_seconds(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

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

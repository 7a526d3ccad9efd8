//! Safe retries: a request sent again with the same idempotency key gets the first answer back
//! and changes nothing.
//!
//! The record of a request (its fingerprint and the response it got) is written in the same
//! transaction as the request's effect, so an effect without its record, or the reverse, cannot
//! exist, even across a crash. Writers are serialised, so a retry that arrives while the first
//! request runs waits for it and then replays its answer.

use std::fmt;

use chrono::{DateTime, Duration, Utc};
use sha2::{Digest, Sha256};

use crate::validation::ValidationError;

/// How long a record is kept: a retry within this time replays; after it, the key is free again.
pub const RECORD_LIFETIME: Duration = Duration::hours(24);

/// A client's idempotency key for one request. It is scoped to the caller that sends it (the
/// use case takes the scope from its [`Caller`](crate::Caller)), so keys of different callers
/// never collide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey {
    /// The client's key: 1 to 255 visible ASCII characters.
    pub key: String,
    /// A hash of what the request asks for, to tell a retry from a different request.
    pub fingerprint: [u8; 32],
}

impl IdempotencyKey {
    /// Checks the client's key and fingerprints the request: its method, its path and its
    /// body in a canonical form (so insignificant white space does not make a retry a new request).
    pub fn new(
        key: &str,
        method: &str,
        path: &str,
        canonical_body: &[u8],
    ) -> Result<Self, ValidationError> {
        if key.is_empty() || key.len() > 255 || !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(ValidationError::new(
                "Idempotency-Key",
                "must be 1 to 255 visible ASCII characters",
            ));
        }
        let mut hash = Sha256::new();
        for part in [
            method.as_bytes(),
            b"\n",
            path.as_bytes(),
            b"\n",
            canonical_body,
        ] {
            hash.update(part);
        }
        Ok(Self {
            key: key.to_owned(),
            fingerprint: hash.finalize().into(),
        })
    }
}

/// What a store keeps for an idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyRecord {
    /// The request's fingerprint.
    pub fingerprint: [u8; 32],
    /// The answer the request got, as the caller's [`Idempotent::record`] made it: opaque to
    /// this crate (the HTTP layer keeps its status, headers and body there).
    pub response: Vec<u8>,
    /// When it was recorded; it is forgotten [`RECORD_LIFETIME`] later.
    pub recorded_at: DateTime<Utc>,
}

/// Asks a create to run at most once per idempotency key: the effect, its events and the
/// answer `record` makes of the result are committed together, and a retry with the same key
/// and request gets that answer back ([`Outcome::Replayed`]) and changes nothing. The same key
/// with another request is refused; a refused request records nothing, so its retry runs again.
pub struct Idempotent<'a, T> {
    /// The client's key and the request's fingerprint.
    pub key: IdempotencyKey,
    /// Makes the answer to record from what the create made.
    pub record: &'a dyn Fn(&T) -> Vec<u8>,
}

impl<T> fmt::Debug for Idempotent<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Idempotent")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

/// What a create did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<T> {
    /// It made `T` now.
    Done(T),
    /// It had been made before under the same idempotency key: here is the answer recorded
    /// then, and nothing changed.
    Replayed(Vec<u8>),
}

impl<T> Outcome<T> {
    /// What was made now, or `None` for a replay.
    pub fn done(self) -> Option<T> {
        match self {
            Outcome::Done(value) => Some(value),
            Outcome::Replayed(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(text: &str, body: &[u8]) -> Result<IdempotencyKey, ValidationError> {
        IdempotencyKey::new(text, "POST", "/v1/pets", body)
    }

    #[test]
    fn keys_are_bounded_visible_ascii() {
        assert!(key("a", b"{}").is_ok());
        assert!(key(&"k".repeat(255), b"{}").is_ok());
        for bad in ["", "with space", "é", &"k".repeat(256)] {
            assert!(key(bad, b"{}").is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_fingerprint_covers_method_path_and_body() {
        let base = key("k", b"{\"a\":1}").unwrap();
        assert_eq!(
            base.fingerprint,
            key("k", b"{\"a\":1}").unwrap().fingerprint
        );
        assert_ne!(
            base.fingerprint,
            key("k", b"{\"a\":2}").unwrap().fingerprint
        );
        let other_path = IdempotencyKey::new("k", "POST", "/v1/categories", b"{\"a\":1}").unwrap();
        assert_ne!(base.fingerprint, other_path.fingerprint);
    }
}

//! Safe retries: a request sent again with the same idempotency key gets the first answer back
//! and changes nothing.
//!
//! The record of a request (its fingerprint and the response it got) is written in the same
//! transaction as the request's effect, so an effect without its record, or the reverse, cannot
//! exist, even across a crash. Writers are serialised, so a retry that arrives while the first
//! request runs waits for it and then replays its answer.

use chrono::{DateTime, Duration, Utc};
use sha2::{Digest, Sha256};

use crate::error::ValidationError;
use crate::ids::OwnerId;

/// How long a record is kept: a retry within this time replays; after it, the key is free again.
pub const RECORD_LIFETIME: Duration = Duration::hours(24);

/// A client's idempotency key for one request, scoped to the API key that sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey {
    /// Who sent the request (in the HTTP service, the API key's owner id): keys of different
    /// callers never collide.
    pub owner: OwnerId,
    /// The client's key: 1 to 255 visible ASCII characters.
    pub key: String,
    /// A hash of what the request asks for, to tell a retry from a different request.
    pub fingerprint: [u8; 32],
}

impl IdempotencyKey {
    /// Checks the client's key and fingerprints the request: its method, its path and its
    /// body in a canonical form (so insignificant white space does not make a retry a new request).
    pub fn new(
        owner: OwnerId,
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
            owner,
            key: key.to_owned(),
            fingerprint: hash.finalize().into(),
        })
    }
}

/// A response as it was first sent, to send again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedResponse {
    /// Its status code.
    pub status: u16,
    /// The headers that matter for a replay (`Location`, `ETag`), in order.
    pub headers: Vec<(String, String)>,
    /// Its body.
    pub body: Vec<u8>,
}

/// What a store keeps for an idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyRecord {
    /// The request's fingerprint.
    pub fingerprint: [u8; 32],
    /// The response it got.
    pub response: RecordedResponse,
    /// When it was recorded; it is forgotten [`RECORD_LIFETIME`] later.
    pub recorded_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(text: &str, body: &[u8]) -> Result<IdempotencyKey, ValidationError> {
        IdempotencyKey::new(OwnerId::new(1).unwrap(), text, "POST", "/v1/pets", body)
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
        let other_path = IdempotencyKey::new(
            OwnerId::new(1).unwrap(),
            "k",
            "POST",
            "/v1/categories",
            b"{\"a\":1}",
        )
        .unwrap();
        assert_ne!(base.fingerprint, other_path.fingerprint);
    }
}

//! Signing deliveries the Standard Webhooks way: `webhook-signature: v1,<base64 HMAC-SHA256>`
//! of `id.timestamp.body`, with the subscription's secret.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::validation::ValidationError;

/// A subscription's signing secret: `whsec_` and the base64 of 32 random bytes, the form the
/// Standard Webhooks libraries take. The service keeps it to sign with; it is shown once, to
/// whoever created the subscription.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret {
    text: String,
    key: Vec<u8>,
}

impl fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A secret never reaches a log through `{:?}`.
        f.write_str("WebhookSecret(…)")
    }
}

impl WebhookSecret {
    const PREFIX: &'static str = "whsec_";

    /// A new secret from 32 random bytes (from the OS's generator).
    pub fn from_random(bytes: [u8; 32]) -> Self {
        Self {
            text: format!("{}{}", Self::PREFIX, BASE64.encode(bytes)),
            key: bytes.to_vec(),
        }
    }

    /// Reads a secret back from its text form (`whsec_<base64>`).
    pub fn parse(text: &str) -> Result<Self, ValidationError> {
        let key = text
            .strip_prefix(Self::PREFIX)
            .and_then(|encoded| BASE64.decode(encoded).ok())
            .filter(|key| (24..=64).contains(&key.len()))
            .ok_or_else(|| {
                ValidationError::new("secret", "must be whsec_ and 24 to 64 bytes in base64")
            })?;
        Ok(Self {
            text: text.to_owned(),
            key,
        })
    }

    /// The secret's text form, to show once and to store.
    pub fn reveal(&self) -> &str {
        &self.text
    }

    /// The `webhook-signature` header value for a message: `v1,` and the base64 of the
    /// HMAC-SHA256, keyed with the secret's bytes, of `"{id}.{timestamp}.{body}"`.
    pub fn sign(&self, message_id: &str, timestamp: i64, body: &[u8]) -> String {
        format!(
            "v1,{}",
            BASE64.encode(self.mac(message_id, timestamp, body))
        )
    }

    /// Whether `header` (a `webhook-signature` value: space-separated `v1,<base64>` entries)
    /// holds a valid signature of the message; compared in constant time. What a receiver
    /// does, and what the tests do.
    pub fn verify(&self, message_id: &str, timestamp: i64, body: &[u8], header: &str) -> bool {
        header
            .split(' ')
            .filter_map(|entry| entry.strip_prefix("v1,"))
            .filter_map(|encoded| BASE64.decode(encoded).ok())
            .any(|signature| {
                let mut mac = self.hmac();
                mac.update(&signed_content(message_id, timestamp, body));
                mac.verify_slice(&signature).is_ok()
            })
    }

    fn mac(&self, message_id: &str, timestamp: i64, body: &[u8]) -> Vec<u8> {
        let mut mac = self.hmac();
        mac.update(&signed_content(message_id, timestamp, body));
        mac.finalize().into_bytes().to_vec()
    }

    fn hmac(&self) -> Hmac<Sha256> {
        // HMAC takes a key of any length; `parse` and `from_random` bound it anyway.
        match Hmac::<Sha256>::new_from_slice(&self.key) {
            Ok(mac) => mac,
            Err(_) => unreachable!("HMAC accepts keys of every length"),
        }
    }
}

fn signed_content(message_id: &str, timestamp: i64, body: &[u8]) -> Vec<u8> {
    let mut content = format!("{message_id}.{timestamp}.").into_bytes();
    content.extend_from_slice(body);
    content
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn signature_matches_the_standard_webhooks_test_vector() {
        // The example of the Standard Webhooks specification and its reference libraries.
        let secret = WebhookSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let body = br#"{"test": 2432232314}"#;
        let signature = secret.sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body);
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        assert!(secret.verify("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body, &signature));
        assert!(!secret.verify("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265331, body, &signature));
    }

    #[test]
    fn secrets_round_trip_and_do_not_print() {
        let secret = WebhookSecret::from_random([7; 32]);
        assert!(secret.reveal().starts_with("whsec_"));
        assert_eq!(WebhookSecret::parse(secret.reveal()), Ok(secret.clone()));
        assert!(!format!("{secret:?}").contains(secret.reveal()));
        assert!(WebhookSecret::parse("whsec_short").is_err());
        assert!(WebhookSecret::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_err());
    }

    proptest! {
        #[test]
        fn a_signature_verifies_only_its_own_message(key in any::<[u8; 32]>(), body in any::<Vec<u8>>(), other in any::<Vec<u8>>(), ts in 0i64..4_000_000_000) {
            let secret = WebhookSecret::from_random(key);
            let signature = secret.sign("42", ts, &body);
            prop_assert!(secret.verify("42", ts, &body, &signature));
            let rotated = format!("v1,AAAA {signature}");
            prop_assert!(secret.verify("42", ts, &body, &rotated));
            if other != body {
                prop_assert!(!secret.verify("42", ts, &other, &signature));
            }
            prop_assert!(!secret.verify("43", ts, &body, &signature));
        }
    }
}

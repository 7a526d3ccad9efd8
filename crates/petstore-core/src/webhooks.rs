//! Webhooks: subscriptions that receive matching events by HTTP POST, signed the
//! [Standard Webhooks](https://www.standardwebhooks.com/) way, in order and at least once.
//!
//! This module holds the rules; the HTTP layer does the sending. A subscription keeps a
//! cursor, [`DeliveryState::delivered_through`]: every matching event up to it has been
//! delivered (answered with a 2xx). The next matching event after the cursor is the only one
//! in flight, so a receiver sees events in order; the cursor moves only after a 2xx and in
//! the same transaction as the attempt's record, so a crash between sending and recording
//! sends the event again (at least once; `webhook-id` lets the receiver drop the repeat).
//! A failed attempt is retried after an exponentially growing, capped delay
//! ([`RetryPolicy`]), for as long as the subscription exists: events are never dropped.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use chrono::{DateTime, Utc};
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Deserializer, Serialize};
use sha2::Sha256;

use crate::error::{DomainError, ValidationError};
use crate::events::{Event, EventType};
use crate::ids::{DeliveryId, EventId, WebhookId};
use crate::values::PageSize;

/// Where deliveries are POSTed: an absolute `http` or `https` URL.
///
/// The accepted form, also published as the schema's pattern: a lower-case `http://` or
/// `https://`, a host (a DNS name or an IPv4 address; an IPv6 receiver is reached through its
/// name), an optional port from 1 to 65535, and an optional path and query of URL characters;
/// no user information, no fragment, at most 2048 characters. Whether the host may be a private
/// address is decided when delivering, on the address it resolves to
/// ([`is_public_address`]), and when subscribing for a literal address.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct WebhookUrl {
    text: String,
    #[serde(skip)]
    host_end: usize,
    #[serde(skip)]
    scheme_len: usize,
}

/// The regex a [`WebhookUrl`] matches (ECMA-262 and Python alike).
pub const WEBHOOK_URL_PATTERN: &str =
    r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/([-A-Za-z0-9._~:/?@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)?$";

impl WebhookUrl {
    /// The most characters a URL may have.
    pub const MAX_CHARS: usize = 2048;

    /// Checks `text` against the accepted form.
    pub fn parse(text: &str) -> Result<Self, ValidationError> {
        let invalid = |reason: &'static str| ValidationError::new("url", reason);
        if text.len() > Self::MAX_CHARS {
            return Err(invalid("must be at most 2048 characters"));
        }
        let scheme_len = if text.starts_with("https://") {
            8
        } else if text.starts_with("http://") {
            7
        } else {
            return Err(invalid("must start with http:// or https://"));
        };
        let rest = &text[scheme_len..];
        let authority_len = rest.find('/').unwrap_or(rest.len());
        let (authority, path) = rest.split_at(authority_len);
        let (host, port) = split_port(authority)
            .ok_or_else(|| invalid("must have a host: a name or an IPv4 address"))?;
        if let Some(port) = port {
            let valid = port.len() <= 5
                && port.bytes().all(|b| b.is_ascii_digit())
                && matches!(port.parse::<u32>(), Ok(1..=65535));
            if !valid {
                return Err(invalid("port must be a number from 1 to 65535"));
            }
        }
        if !is_url_path(path) {
            return Err(invalid(
                "path may hold only URL characters and %-escapes of two hex digits (no spaces, no fragment)",
            ));
        }
        Ok(Self {
            text: text.to_owned(),
            host_end: scheme_len + host.len(),
            scheme_len,
        })
    }

    /// The URL as text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The host as written.
    pub fn host(&self) -> &str {
        &self.text[self.scheme_len..self.host_end]
    }

    /// The host, if it is a literal IP address rather than a name.
    pub fn literal_address(&self) -> Option<IpAddr> {
        self.host().parse().ok()
    }

    /// Refuses a URL whose host is a literal address that is not public; a name is checked
    /// when delivering, on what it resolves to then.
    pub fn require_public_literal(&self) -> Result<(), DomainError> {
        match self.literal_address() {
            Some(address) if !is_public_address(address) => Err(DomainError::ForbiddenTarget {
                host: self.host().to_owned(),
            }),
            _ => Ok(()),
        }
    }
}

/// Whether `path` (empty, or from its `/` on) holds only RFC 3986 path and query characters,
/// with every `%` starting an escape of two hex digits.
fn is_url_path(path: &str) -> bool {
    let bytes = path.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let escape = bytes.get(i + 1..i + 3);
            if !escape.is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit)) {
                return false;
            }
            i += 3;
        } else if b.is_ascii_alphanumeric() || b"-._~:/?@!$&'()*+,;=".contains(&b) {
            i += 1;
        } else {
            return false;
        }
    }
    true
}

/// Splits `host[:port]`; `None` if the host is missing or malformed.
fn split_port(authority: &str) -> Option<(&str, Option<&str>)> {
    let (host, port) = match authority.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    };
    let ok = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
    ok.then_some((host, port))
}

impl fmt::Display for WebhookUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for WebhookUrl {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(|e| serde::de::Error::custom(e.reason))
    }
}

/// Whether a delivery may go to `address`: false for loopback, private, link-local (cloud
/// metadata services live there), shared, unspecified, multicast, broadcast, documentation and
/// other reserved ranges, in IPv4 and IPv6, including IPv4 addresses written as IPv6.
///
/// Webhook targets are chosen by admins, but a service that POSTs wherever it is told can be
/// turned against the network it runs in (SSRF); by default only public addresses are allowed.
pub fn is_public_address(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public_v4(v4),
            None => is_public_v6(v6),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let reserved = ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0 // "this network"
        || (a == 100 && (64..128).contains(&b)) // shared address space (carrier NAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240; // reserved for future use
    !reserved
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    let reserved = ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00 // unique local
        || (first & 0xffc0) == 0xfe80 // link-local
        || (first == 0x2001 && ip.segments()[1] == 0x0db8) // documentation
        || (first == 0x0064 && ip.segments()[1] == 0xff9b) // NAT64 to IPv4
        || ip.to_ipv4().is_some_and(|v4| !is_public_v4(v4)); // IPv4-compatible
    !reserved
}

/// The event types a subscription receives: at least one, each at most once.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct EventTypes(Vec<EventType>);

impl EventTypes {
    /// Checks that `types` is not empty and repeats nothing.
    pub fn new(types: Vec<EventType>) -> Result<Self, ValidationError> {
        if types.is_empty() {
            return Err(ValidationError::new(
                "events",
                "must name at least one event type",
            ));
        }
        for (i, t) in types.iter().enumerate() {
            if types[..i].contains(t) {
                return Err(ValidationError::new(
                    "events",
                    format!("names {t} more than once"),
                ));
            }
        }
        Ok(Self(types))
    }

    /// Whether an event of this type is delivered.
    pub fn contains(&self, event_type: EventType) -> bool {
        self.0.contains(&event_type)
    }

    /// The types, in the order they were given.
    pub fn as_slice(&self) -> &[EventType] {
        &self.0
    }
}

impl<'de> Deserialize<'de> for EventTypes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let types = Vec::<EventType>::deserialize(deserializer)?;
        Self::new(types).map_err(|e| serde::de::Error::custom(e.reason))
    }
}

/// A subscription to create.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewWebhook {
    /// Where to POST the events.
    pub url: WebhookUrl,
    /// Which events to send.
    pub events: EventTypes,
}

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

/// Where a subscription's deliveries stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeliveryState {
    /// Every matching event up to this id has been delivered (0: none yet). A subscription
    /// starts at the latest event when it is created: it receives what happens afterwards.
    #[serde(with = "cursor")]
    #[cfg_attr(feature = "openapi", schema(value_type = i64, minimum = 0))]
    pub delivered_through: Option<EventId>,
    /// Failed attempts at the next event since the last success.
    pub failed_attempts: u32,
    /// When the next attempt is due, after a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<DateTime<Utc>>,
}

/// The cursor's JSON form: 0 for "none yet", so it is always an integer.
mod cursor {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::ids::EventId;

    pub fn serialize<S: Serializer>(id: &Option<EventId>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(id.map_or(0, EventId::get))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<EventId>, D::Error> {
        match i64::deserialize(d)? {
            0 => Ok(None),
            n => EventId::new(n)
                .map(Some)
                .map_err(|e| serde::de::Error::custom(e.reason)),
        }
    }
}

impl DeliveryState {
    /// A new subscription's state: nothing delivered, starting after `start_after`.
    pub fn starting_after(start_after: Option<EventId>) -> Self {
        Self {
            delivered_through: start_after,
            failed_attempts: 0,
            next_attempt_at: None,
        }
    }

    /// Whether an attempt may be made at `now`.
    pub fn is_due(&self, now: DateTime<Utc>) -> bool {
        self.next_attempt_at.is_none_or(|at| at <= now)
    }
}

/// A subscription, as stored and listed: never its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    /// Its id.
    pub id: WebhookId,
    /// Where events are POSTed.
    pub url: WebhookUrl,
    /// Which events it receives.
    pub events: EventTypes,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// Where its deliveries stand.
    pub delivery: DeliveryState,
}

/// What became of one attempt to deliver an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum DeliveryOutcome {
    /// The receiver answered 2xx.
    Delivered,
    /// Anything else: another status, a refused or timed-out connection, a forbidden address.
    Failed,
}

impl DeliveryOutcome {
    /// The outcome as the API spells it.
    pub const fn as_str(self) -> &'static str {
        match self {
            DeliveryOutcome::Delivered => "delivered",
            DeliveryOutcome::Failed => "failed",
        }
    }
}

/// What the sender observed in one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptReport {
    /// The receiver's status code, if it answered.
    pub status_code: Option<u16>,
    /// Why the attempt failed when the receiver did not answer (or the address was refused).
    pub error: Option<String>,
}

impl AttemptReport {
    /// A 2xx answer delivers; anything else (including a redirect, which is not followed)
    /// fails.
    pub fn outcome(&self) -> DeliveryOutcome {
        match self.status_code {
            Some(200..=299) => DeliveryOutcome::Delivered,
            _ => DeliveryOutcome::Failed,
        }
    }
}

/// One attempt to deliver an event, as recorded and shown by `GET /v1/webhooks/{id}/deliveries`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeliveryAttempt {
    /// Its id; later attempts have larger ids.
    pub id: DeliveryId,
    /// The event sent (also the `webhook-id` header).
    pub event_id: EventId,
    /// The event's type.
    pub event_type: EventType,
    /// 1 for the first attempt at this event, 2 for the first retry, …
    pub attempt: u32,
    /// When it was made.
    pub attempted_at: DateTime<Utc>,
    /// What became of it.
    pub outcome: DeliveryOutcome,
    /// The receiver's status code, if it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u16>,
    /// Why it failed when the receiver did not answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When the event will be tried again, after a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<DateTime<Utc>>,
}

/// An attempt to record, before the store gives it an id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDeliveryAttempt {
    /// The subscription.
    pub webhook_id: WebhookId,
    /// The event sent.
    pub event_id: EventId,
    /// The event's type.
    pub event_type: EventType,
    /// Its number for this event.
    pub attempt: u32,
    /// When it was made.
    pub attempted_at: DateTime<Utc>,
    /// What became of it.
    pub outcome: DeliveryOutcome,
    /// The receiver's status code.
    pub status_code: Option<u16>,
    /// Why it failed.
    pub error: Option<String>,
    /// When it will be tried again.
    pub next_attempt_at: Option<DateTime<Utc>>,
}

impl NewDeliveryAttempt {
    /// The attempt as recorded, once the store has given it `id`.
    pub fn recorded(&self, id: DeliveryId) -> DeliveryAttempt {
        DeliveryAttempt {
            id,
            event_id: self.event_id,
            event_type: self.event_type,
            attempt: self.attempt,
            attempted_at: self.attempted_at,
            outcome: self.outcome,
            status_code: self.status_code,
            error: self.error.clone(),
            next_attempt_at: self.next_attempt_at,
        }
    }
}

/// The next delivery a subscription owes: the event, where to send it and how to sign it.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingDelivery {
    /// The subscription.
    pub webhook_id: WebhookId,
    /// Where to POST.
    pub url: WebhookUrl,
    /// What to sign with.
    pub secret: WebhookSecret,
    /// The event.
    pub event: Event,
    /// Which attempt at this event this is (1 for the first).
    pub attempt: u32,
}

/// How many delivery attempts are kept per subscription, the latest: enough to see a long
/// outage, without the table growing with every event ever delivered.
pub const KEPT_ATTEMPTS: u32 = 1000;

/// How long to wait before retrying: `first_retry`, doubled after each further failure, never
/// more than `max_delay`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The wait after the first failure.
    pub first_retry: Duration,
    /// The longest wait.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    /// 5 s after the first failure, then 10 s, 20 s, … up to an hour between attempts.
    fn default() -> Self {
        Self {
            first_retry: Duration::from_secs(5),
            max_delay: Duration::from_secs(3600),
        }
    }
}

impl RetryPolicy {
    /// The wait after the `failures`-th consecutive failure (1 for the first).
    pub fn delay_after(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(32);
        self.first_retry
            .saturating_mul(1u32 << doublings.min(31))
            .min(self.max_delay)
    }
}

/// Position for listing subscriptions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WebhookQuery {
    /// Only subscriptions with a larger id.
    pub after: Option<WebhookId>,
    /// Page size.
    pub limit: PageSize,
}

/// Position for listing a subscription's delivery attempts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryQuery {
    /// Only attempts with a larger id.
    pub after: Option<DeliveryId>,
    /// Page size.
    pub limit: PageSize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn url(text: &str) -> Result<WebhookUrl, ValidationError> {
        WebhookUrl::parse(text)
    }

    #[test]
    fn urls_must_be_absolute_http_or_https() {
        for good in [
            "http://example.com",
            "https://example.com/hooks/petstore?token=a%20b&x=%C3%A9",
            "http://127.0.0.1:8080/",
            "http://localhost",
        ] {
            assert!(url(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "ftp://example.com",
            "HTTP://example.com",
            "https://",
            "https://user:pw@example.com/",
            "https://example.com/a b",
            "https://example.com/#frag",
            "https://j:3015/hX%U",
            "https://example.com/a%2",
            "https://example.com:0/",
            "https://example.com:65536/",
            "https://example.com:/",
            "https://[zz]/",
            "https://[::1]:443/x",
            "http://[0e0:27a:]/",
            "//example.com",
        ] {
            assert!(url(bad).is_err(), "{bad}");
        }
        assert!(url(&format!("https://e.com/{}", "a".repeat(2048))).is_err());
    }

    #[test]
    fn host_is_read_without_port_or_brackets() {
        assert_eq!(
            url("https://example.com:8443/x").unwrap().host(),
            "example.com"
        );
        assert_eq!(
            url("http://10.1.2.3:80").unwrap().literal_address(),
            Some("10.1.2.3".parse().unwrap())
        );
        assert_eq!(url("http://example.com").unwrap().literal_address(), None);
    }

    #[test]
    fn private_and_reserved_addresses_are_not_public() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "240.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:1",
        ] {
            assert!(!is_public_address(private.parse().unwrap()), "{private}");
        }
        for public in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(is_public_address(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn event_types_must_be_given_once_each() {
        assert!(EventTypes::new(vec![]).is_err());
        assert!(EventTypes::new(vec![EventType::PetCreated, EventType::PetCreated]).is_err());
        let types = EventTypes::new(vec![EventType::OrderPlaced]).unwrap();
        assert!(types.contains(EventType::OrderPlaced));
        assert!(!types.contains(EventType::PetCreated));
    }

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

    #[test]
    fn only_2xx_delivers() {
        let report = |status_code| AttemptReport {
            status_code,
            error: None,
        };
        assert_eq!(report(Some(200)).outcome(), DeliveryOutcome::Delivered);
        assert_eq!(report(Some(204)).outcome(), DeliveryOutcome::Delivered);
        for failed in [None, Some(301), Some(404), Some(500), Some(503)] {
            assert_eq!(report(failed).outcome(), DeliveryOutcome::Failed);
        }
    }

    proptest! {
        #[test]
        fn retry_delays_grow_and_stay_capped(failures in 1u32..100, first in 1u64..60, cap in 60u64..100_000) {
            let policy = RetryPolicy {
                first_retry: Duration::from_secs(first),
                max_delay: Duration::from_secs(cap),
            };
            let delay = policy.delay_after(failures);
            prop_assert!(delay <= policy.max_delay);
            prop_assert!(delay >= policy.first_retry.min(policy.max_delay));
            prop_assert!(policy.delay_after(failures + 1) >= delay);
            if failures == 1 {
                prop_assert_eq!(delay, policy.first_retry);
            }
        }

        #[test]
        fn url_pattern_and_parser_agree(text in r"https?://([A-Za-z0-9.:\[\]@-]{0,12})(:[0-9]{0,6})?(/[ -~]{0,12}(%[0-9A-Fa-f]{0,2})?)?") {
            let pattern = regex::Regex::new(WEBHOOK_URL_PATTERN).unwrap();
            let parsed = WebhookUrl::parse(&text);
            if parsed.is_ok() {
                prop_assert!(pattern.is_match(&text), "{} accepted but not matched", text);
            }
            // The pattern cannot bound a port; every other match parses.
            let bad_port = text
                .rsplit_once(':')
                .and_then(|(_, p)| p.split('/').next())
                .and_then(|p| p.parse::<u32>().ok())
                .is_some_and(|p| p == 0 || p > 65535);
            if pattern.is_match(&text) && !bad_port {
                prop_assert!(parsed.is_ok(), "{} matched but refused: {:?}", text, parsed);
            }
        }

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

//! Where deliveries go: the webhook URL's accepted form, and which addresses are public.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Deserializer, Serialize};

use crate::error::DomainError;
use crate::validation::ValidationError;

/// Where deliveries are POSTed: an absolute `http` or `https` URL.
///
/// The accepted form, also published as the schema's pattern: a lower-case `http://` or
/// `https://`, a host (a DNS name of non-empty labels, or an IPv4 address as a dotted quad
/// without leading zeros; a name whose last label is a number is refused, since URL parsers
/// read it as an address; an IPv6 or internationalised (`xn--`) receiver is reached through
/// an ASCII name), an optional port from 1 to 65535, and an optional path and query of URL characters;
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

/// The regex a [`WebhookUrl`] matches (ECMA-262 and Python alike). Without look-ahead, so it
/// reads as alternatives: a dotted quad, or labels none of which starts with `xn--`, the last
/// of which is not a number (digits, or `0x` and hex digits).
pub const WEBHOOK_URL_PATTERN: &str = concat!(
    r"^https?://(?:",
    // A dotted quad without leading zeros.
    r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}",
    r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])",
    // Or a name: labels that do not start with `xn--`…
    r"|(?:(?:[A-WYZa-wyz0-9-][A-Za-z0-9-]*|[Xx](?:[A-MO-Za-mo-z0-9-][A-Za-z0-9-]*)?",
    r"|[Xx][Nn](?:[A-Za-z0-9][A-Za-z0-9-]*)?|[Xx][Nn]-(?:[A-Za-z0-9][A-Za-z0-9-]*)?)\.)*",
    // …the last of which is not a number either.
    r"(?:[A-WYZa-wyz-][A-Za-z0-9-]*|[Xx](?:[A-MO-Za-mo-z0-9-][A-Za-z0-9-]*)?",
    r"|[Xx][Nn](?:[A-Za-z0-9][A-Za-z0-9-]*)?|[Xx][Nn]-(?:[A-Za-z0-9][A-Za-z0-9-]*)?",
    r"|[1-9][0-9]*[A-Za-z-][A-Za-z0-9-]*|0[0-9]+[A-Za-z-][A-Za-z0-9-]*",
    r"|0[A-WYZa-wyz-][A-Za-z0-9-]*|0[xX][0-9A-Fa-f]*[G-Zg-z-][A-Za-z0-9-]*)",
    r")(:[0-9]{1,5})?(/([-A-Za-z0-9._~:/?@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)?$",
);

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
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        && host.split('.').all(|label| {
            // Punycode (`xn--`) is refused rather than decoded: a label URL parsers cannot
            // decode would be stored, then fail every delivery.
            !label.is_empty()
                && !label
                    .get(..4)
                    .is_some_and(|p| p.eq_ignore_ascii_case("xn--"))
        })
        && (!ends_in_a_number(host) || host.parse::<Ipv4Addr>().is_ok());
    ok.then_some((host, port))
}

/// Whether URL parsers read `host` as an IPv4 address: its last label is a number, in decimal
/// or `0x` hex (WHATWG URL, "ends in a number"). Such a host must then be a plain dotted quad:
/// `0x7f.1`, `127.1` or `2130706433` are 127.0.0.1 to the client that delivers, so letting them
/// pass as names would dodge the check on literal addresses.
fn ends_in_a_number(host: &str) -> bool {
    let last = host.rsplit('.').next().unwrap_or(host);
    let hex = last
        .strip_prefix("0x")
        .or_else(|| last.strip_prefix("0X"))
        .is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_hexdigit()));
    hex || last.bytes().all(|b| b.is_ascii_digit())
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

    proptest! {
        #[test]
        fn url_pattern_and_parser_agree(text in r"https?://([A-Za-z0-9.:\[\]@-]{0,12}|([xX0-9][nNxX0-9a-g-]{0,4}\.){0,4}[0-9a-gxX-]{0,5})(:[0-9]{0,6})?(/[ -~]{0,12}(%[0-9A-Fa-f]{0,2})?)?") {
            let pattern = regex::Regex::new(WEBHOOK_URL_PATTERN).unwrap();
            let parsed = WebhookUrl::parse(&text);
            if parsed.is_ok() {
                prop_assert!(pattern.is_match(&text), "{} accepted but not matched", text);
            }
            // The pattern cannot bound a port; every other match parses. The port is the
            // authority's (a `:` later in the path is not one).
            let authority = text
                .split_once("://")
                .map_or("", |(_, rest)| rest.split(['/', '?']).next().unwrap_or(""));
            let bad_port = authority
                .rsplit_once(':')
                .and_then(|(_, p)| p.parse::<u32>().ok())
                .is_some_and(|p| p == 0 || p > 65535);
            if pattern.is_match(&text) && !bad_port {
                prop_assert!(parsed.is_ok(), "{} matched but refused: {:?}", text, parsed);
            }
        }
    }
}

//! The differential check of the webhook URL parser against the `url` crate, shared by the
//! property test and the fuzz target (`fuzz/fuzz_targets/webhook_url.rs`).

use petstore_core::WebhookUrl;

/// Panics if [`WebhookUrl::parse`] accepts `text` and `url` reads it differently: another
/// scheme, host or port, or a literal address where we see a name (or the reverse).
pub(crate) fn check(text: &str) {
    let Ok(ours) = WebhookUrl::parse(text) else {
        return;
    };
    let theirs = url::Url::parse(text)
        .unwrap_or_else(|e| panic!("{text:?}: accepted here, refused by url ({e})"));
    assert_eq!(
        format!("{}://", theirs.scheme()),
        text[..text.find("://").unwrap() + 3],
        "{text:?}: scheme"
    );
    let host = theirs.host_str().expect("an http URL has a host");
    assert_eq!(host, ours.host().to_ascii_lowercase(), "{text:?}: host");
    let port = text[ours.host().len() + text.find("://").unwrap() + 3..]
        .strip_prefix(':')
        .map(|after| {
            let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<u16>().unwrap()
        });
    let default = if theirs.scheme() == "https" { 443 } else { 80 };
    assert_eq!(
        theirs.port_or_known_default(),
        Some(port.unwrap_or(default)),
        "{text:?}: port"
    );
    // A literal address is seen as one by both, or by neither.
    let literal = matches!(theirs.host(), Some(url::Host::Ipv4(_) | url::Host::Ipv6(_)));
    assert_eq!(
        ours.literal_address().is_some(),
        literal,
        "{text:?}: literal address"
    );
}

//! The webhook URL parser against the `url` crate, which the delivery client uses to connect.
//!
//! Whatever [`WebhookUrl::parse`] accepts, `url` must read the same way: the same scheme, the
//! same host and the same port. Where they disagreed, a subscription could be checked as one
//! host and delivered to another (a host such as `0x7f.1` is a name to a naive check and
//! 127.0.0.1 to `url`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

#[path = "support/url_differential.rs"]
mod url_differential;

use proptest::prelude::*;
use url_differential::check;

/// URL-shaped text: mostly plausible, with the characters parsers disagree on mixed in.
fn url_like() -> impl Strategy<Value = String> {
    let scheme = prop_oneof![
        Just("http://"),
        Just("https://"),
        Just("HTTP://"),
        Just("http:/"),
        Just("ftp://"),
    ];
    let host = prop_oneof![
        "[a-z0-9.-]{0,12}",
        "[A-Za-z0-9.\\-_~%@:\\[\\]]{0,12}",
        "(0x[0-9a-fA-F]{1,4}|0[0-7]{1,4}|[0-9]{1,10})(\\.(0x[0-9a-f]{1,3}|[0-9]{1,4})){0,4}\\.?",
        "xn--[a-z0-9-]{0,8}(\\.[a-z]{1,4})?",
    ];
    let port = prop_oneof![Just(String::new()), ":[0-9]{0,6}"];
    let rest = prop_oneof![
        Just(String::new()),
        "/[A-Za-z0-9._~:/?@!$&'()*+,;=%-]{0,16}",
        "[/?#\\\\][ -~]{0,16}",
    ];
    (scheme, host, port, rest).prop_map(|(s, h, p, r)| format!("{s}{h}{p}{r}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn what_we_accept_url_reads_alike(text in url_like()) {
        check(&text);
    }
}

#[test]
fn the_cases_the_fuzzer_and_this_test_found_stay_fixed() {
    for text in [
        "http://0x7f.1/",
        "http://127.1/",
        "http://2130706433/",
        "http://0177.0.0.1/",
        "http://127.0.0.1./",
        "http://1.2.3.4.5/",
        "http://example.com./",
        "http://EXAMPLE.com:8080/x",
        "https://a-b.example:443/",
        "http://xn--1--5.b:21",
        "http://XN--nxasmq6b.example/",
    ] {
        check(text);
    }
}

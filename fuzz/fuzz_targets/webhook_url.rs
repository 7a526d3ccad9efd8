//! The webhook URL parser: never panics, accepts only what it can give back unchanged, and
//! reads every URL it accepts as the `url` crate (the delivery client's parser) does.
#![no_main]

use libfuzzer_sys::fuzz_target;
use petstore_core::WebhookUrl;

#[path = "../../crates/petstore-core/tests/support/url_differential.rs"]
mod url_differential;

fuzz_target!(|text: &str| {
    if let Ok(parsed) = WebhookUrl::parse(text) {
        assert_eq!(parsed.as_str(), text);
        assert_eq!(WebhookUrl::parse(parsed.as_str()).as_ref(), Ok(&parsed));
    }
    url_differential::check(text);
});

//! `If-Match` / `If-None-Match` values: never panics, and the tags it reads, written back as
//! a list, read the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use petstore_http::conditional::{Condition, parse_condition};

fuzz_target!(|text: &str| {
    if let Some(Condition::Tags(tags)) = parse_condition(text) {
        assert!(!tags.is_empty());
        for tag in &tags {
            let quoted = tag.strip_prefix("W/").unwrap_or(tag);
            assert!(quoted.len() >= 2 && quoted.starts_with('"') && quoted.ends_with('"'));
        }
        assert_eq!(
            parse_condition(&tags.join(", ")),
            Some(Condition::Tags(tags.clone()))
        );
    }
});

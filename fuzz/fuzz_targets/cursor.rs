//! Cursor decoding: never panics, accepts only the published form (`k` and 1 to 15 lower-case
//! hex digits), and a cursor it accepts encodes to one that decodes to the same position.
#![no_main]

use libfuzzer_sys::fuzz_target;
use petstore_http::pagination::Cursor;

fuzz_target!(|text: &str| {
    if let Ok(cursor) = text.parse::<Cursor>() {
        let digits = text.strip_prefix('k').expect("the prefix");
        assert!((1..=15).contains(&digits.len()));
        assert!(digits.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
        assert_eq!(cursor.to_string().parse::<Cursor>(), Ok(cursor));
    }
});

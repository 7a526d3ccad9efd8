//! A Rust receiver verifying a webhook delivery with `petstore-core`'s `WebhookSecret`.
//!
//! Run with `cargo run -p petstore-core --example verify_webhook`. A real receiver takes the
//! three `webhook-*` headers and the raw body from its HTTP framework; here they are the
//! Standard Webhooks specification's example.

use petstore_core::WebhookSecret;

/// Deliveries stamped further than this from now are refused, so a captured one cannot be
/// replayed later.
const TOLERANCE_SECONDS: i64 = 5 * 60;

fn verify(
    secret: &WebhookSecret,
    id: &str,
    timestamp: &str,
    signature: &str,
    body: &[u8],
    now: i64,
) -> Result<serde_json::Value, String> {
    let timestamp: i64 = timestamp.parse().map_err(|_| "bad webhook-timestamp")?;
    if (now - timestamp).abs() > TOLERANCE_SECONDS {
        return Err("webhook-timestamp is too far from now".into());
    }
    if !secret.verify(id, timestamp, body, signature) {
        return Err("no valid signature".into());
    }
    serde_json::from_slice(body).map_err(|e| e.to_string())
}

fn main() -> Result<(), String> {
    let secret = WebhookSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        .map_err(|e| e.reason.into_owned())?;
    let (id, timestamp) = ("msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330");
    let signature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    let body = br#"{"test": 2432232314}"#;

    let event = verify(&secret, id, timestamp, signature, body, 1_614_265_330)?;
    println!("verified: {event}");
    let tampered = verify(
        &secret,
        id,
        timestamp,
        signature,
        br#"{"test": 1}"#,
        1_614_265_330,
    );
    println!("tampered body: {}", tampered.err().unwrap_or_default());
    let replayed = verify(
        &secret,
        id,
        timestamp,
        signature,
        body,
        1_614_265_330 + 3600,
    );
    println!("an hour later: {}", replayed.err().unwrap_or_default());
    Ok(())
}

use super::*;

#[test]
fn a_lease_is_free_when_absent_own_or_expired() {
    let now = DateTime::parse_from_rfc3339("2026-11-23T12:00:00Z")
        .unwrap()
        .to_utc();
    let later = now + chrono::Duration::seconds(30);
    assert!(lease_is_free(None, "a", now));
    assert!(lease_is_free(Some(("a", later)), "a", now), "a renewal");
    assert!(lease_is_free(Some(("b", now)), "a", now), "expired at now");
    assert!(
        !lease_is_free(Some(("b", later)), "a", now),
        "held by another"
    );
}
use proptest::prelude::*;

#[test]
fn event_types_must_be_given_once_each() {
    assert!(EventTypes::new(vec![]).is_err());
    assert!(EventTypes::new(vec![EventType::PetCreated, EventType::PetCreated]).is_err());
    let types = EventTypes::new(vec![EventType::OrderPlaced]).unwrap();
    assert!(types.contains(EventType::OrderPlaced));
    assert!(!types.contains(EventType::PetCreated));
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
}

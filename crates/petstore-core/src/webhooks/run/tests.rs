//! The rules of a delivery run (`run.rs`), without a store.

use proptest::prelude::*;

use super::*;
use crate::events::EventType;

const WANTED: EventType = EventType::PetCreated;
const OTHER: EventType = EventType::PetUpdated;

fn at(seconds: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_795_000_000 + seconds, 0).unwrap()
}

fn run_from(cursor: Option<i64>) -> DeliveryRun {
    let webhook = Webhook {
        id: WebhookId::new(1).unwrap(),
        url: WebhookUrl::parse("https://hooks.example.com/").unwrap(),
        events: EventTypes::new(vec![WANTED]).unwrap(),
        created_at: at(0),
        delivery: DeliveryState::starting_after(cursor.map(|c| EventId::new(c).unwrap())),
    };
    let secret = WebhookSecret::from_random([1; 32]);
    DeliveryRun::begin(webhook, secret, "node-a", at(0), at(30))
}

fn event(id: i64, event_type: EventType) -> Event {
    Event {
        id: EventId::new(id).unwrap(),
        time: at(0),
        event_type,
        subject: format!("pets/{id}"),
        data: serde_json::Value::Null,
        traceparent: None,
        actor: None,
    }
}

fn answered(status: u16) -> AttemptReport {
    AttemptReport {
        status_code: Some(status),
        error: None,
    }
}

fn cursor(record: &RunRecord) -> i64 {
    record.state.delivered_through.map_or(0, EventId::get)
}

#[test]
fn a_page_of_other_types_moves_the_cursor_past_it() {
    let mut run = run_from(Some(3));
    assert!(run.take_page(vec![event(4, OTHER), event(5, OTHER)]));
    assert_eq!(run.next(), None);
    assert!(run.needs_events());
    let record = run.record(
        at(1),
        Duration::from_secs(30),
        &RetryPolicy::default(),
        true,
    );
    assert_eq!(cursor(&record), 5);
    assert_eq!(record.delivered(), 0);
    assert!(record.attempts.is_empty());
    assert!(!run.take_page(vec![]), "an empty page: caught up");
}

#[test]
fn a_failure_is_recorded_with_its_retry_and_the_successes_before_it() {
    let mut run = run_from(None);
    run.take_page(vec![event(1, WANTED), event(2, OTHER), event(3, WANTED)]);
    assert_eq!(
        run.attempted(&answered(204), at(1)),
        DeliveryOutcome::Delivered
    );
    assert_eq!(run.next().unwrap().event.id.get(), 3);
    assert_eq!(
        run.attempted(&answered(500), at(2)),
        DeliveryOutcome::Failed
    );
    assert!(run.has_failed() && run.next().is_none());
    assert!(run.record_due(at(2)), "a failure is recorded at once");
    let policy = RetryPolicy::default();
    let record = run.record(at(2), Duration::from_secs(30), &policy, true);
    assert_eq!(
        cursor(&record),
        2,
        "past the delivered one and the other type"
    );
    assert_eq!(record.state.failed_attempts, 1);
    assert_eq!(record.state.next_attempt_at, Some(at(7)));
    assert_eq!(record.state.delivered_events, 1);
    let kept: Vec<_> = record
        .attempts
        .iter()
        .map(|a| (a.event_id.get(), a.outcome, a.next_attempt_at))
        .collect();
    assert_eq!(
        kept,
        vec![
            (1, DeliveryOutcome::Delivered, None),
            (3, DeliveryOutcome::Failed, Some(at(7)))
        ]
    );
    run.recorded(&record);
    assert!(!run.has_news() && !run.record_due(at(9)));
    let last = run.record(at(9), Duration::from_secs(30), &policy, true);
    assert!(last.attempts.is_empty(), "a failure is recorded once");
    assert_eq!(last.state, record.state, "and its retry stays as written");
}

#[test]
fn deliveries_made_while_a_record_was_written_stay_to_be_recorded() {
    let mut run = run_from(None);
    run.take_page((1..=4).map(|id| event(id, WANTED)).collect());
    run.attempted(&answered(204), at(1));
    run.attempted(&answered(204), at(1));
    let policy = RetryPolicy::default();
    let first = run.record(at(1), Duration::from_secs(30), &policy, false);
    run.attempted(&answered(204), at(2));
    run.recorded(&first);
    assert!(run.has_news());
    let second = run.record(at(3), Duration::from_secs(30), &policy, false);
    assert_eq!((cursor(&first), cursor(&second)), (2, 3));
    assert_eq!(second.delivered(), 1);
    assert_eq!(second.expected.map(EventId::get), Some(2));
    assert_eq!(second.state.delivered_events, 3);
    assert_eq!(
        second
            .attempts
            .iter()
            .map(|a| a.event_id.get())
            .collect::<Vec<_>>(),
        vec![3],
        "the latest success since the first record"
    );
}

#[test]
fn a_lease_is_renewed_before_an_attempt_that_could_outlast_it() {
    let run = run_from(None);
    assert!(!run.lease_ends_within(at(10), Duration::from_secs(10)));
    assert!(run.lease_ends_within(at(21), Duration::from_secs(10)));
}

proptest! {
    /// Whatever the pages and the answers, a run sends the events of its types in id
    /// order, each until it is delivered, and a record never moves the cursor past an
    /// event it has not delivered.
    #[test]
    fn a_run_sends_in_order_and_records_only_what_was_delivered(
        types in proptest::collection::vec(any::<bool>(), 1..60),
        page in 1usize..8,
        answers in proptest::collection::vec(any::<bool>(), 1..80),
    ) {
        let events: Vec<Event> = types
            .iter()
            .enumerate()
            .map(|(i, wanted)| event(i as i64 + 1, if *wanted { WANTED } else { OTHER }))
            .collect();
        let wanted: Vec<i64> = events
            .iter()
            .filter(|e| e.event_type == WANTED)
            .map(|e| e.id.get())
            .collect();
        let mut run = run_from(None);
        let mut delivered = Vec::new();
        let mut answers = answers.into_iter();
        loop {
            if run.needs_events() {
                let from = run.read_from().map_or(0, EventId::get) as usize;
                let next: Vec<Event> = events.iter().skip(from).take(page).cloned().collect();
                if !run.take_page(next) {
                    break;
                }
                continue;
            }
            let Some(pending) = run.next() else { break };
            prop_assert_eq!(Some(&pending.event.id.get()), wanted.get(delivered.len()));
            let Some(ok) = answers.next() else { break };
            if ok {
                run.attempted(&answered(200), at(1));
                delivered.push(pending.event.id.get());
            } else {
                run.attempted(&answered(503), at(1));
            }
            let record = run.record(at(1), Duration::from_secs(30), &RetryPolicy::default(), false);
            let through = cursor(&record);
            prop_assert!(delivered.last().is_none_or(|last| through >= *last));
            if let Some(unsent) = wanted.get(delivered.len()) {
                prop_assert!(through < *unsent, "{through} is past {unsent}, not delivered");
            }
            prop_assert_eq!(record.state.delivered_events, delivered.len() as u64);
            if !ok {
                break;
            }
        }
        prop_assert_eq!(&delivered[..], &wanted[..delivered.len()]);
    }
}

#[test]
fn a_sender_that_waits_out_a_retry_goes_on_with_the_failed_event() {
    let mut run = run_from(None);
    run.take_page(vec![event(1, WANTED), event(2, WANTED)]);
    run.attempted(&answered(503), at(1));
    run.retry();
    assert!(run.has_failed(), "not before the failure is recorded");
    let policy = RetryPolicy::default();
    let failed = run.record(at(1), Duration::from_secs(30), &policy, false);
    run.recorded(&failed);
    run.retry();
    let again = run.next().unwrap();
    assert_eq!((again.event.id.get(), again.attempt), (1, 2));
    run.attempted(&answered(204), at(7));
    assert_eq!(run.next().unwrap().attempt, 1);
    let record = run.record(at(7), Duration::from_secs(30), &policy, true);
    assert_eq!(
        (record.state.failed_attempts, record.state.next_attempt_at),
        (0, None),
        "delivered: no retry pending"
    );
    assert_eq!(
        record
            .attempts
            .iter()
            .map(|a| (a.event_id.get(), a.attempt))
            .collect::<Vec<_>>(),
        vec![(1, 2)],
        "the failure was recorded before; now the success"
    );
}

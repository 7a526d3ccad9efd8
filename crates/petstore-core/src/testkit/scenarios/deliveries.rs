//! Delivery runs: progress recorded in batches, a run cut short, and a resend.

use super::{Fixture, OPERATOR, customer};
use crate::Clock;
use crate::testkit::Must;
use crate::{
    Always, DeliveryOutcome, DeliveryQuery, DomainError, EventId, EventType, RECORD_BATCH,
    RECORD_INTERVAL, Resource, Store, WebhookId,
};

/// Creates `count` pets named `prefix N`, each recording a `pet.created` event.
fn pets<S: Store>(f: &Fixture<S>, prefix: &str, count: u64) {
    for n in 0..count {
        f.pet_with_stock(&format!("{prefix} {n}"), 0);
    }
}

/// The ids of the events `run` is given, in the order it is given them, answering each 204,
/// until it has none left (reading ahead as it goes) or `limit` were given.
fn deliver_all<S: Store>(f: &Fixture<S>, run: &mut crate::DeliveryRun, limit: usize) -> Vec<i64> {
    let mut sent = Vec::new();
    while sent.len() < limit {
        match run.next() {
            Some(pending) => {
                sent.push(pending.event.id.get());
                f.answer(run, 204);
            }
            None if f.read_ahead(run) => {}
            None => break,
        }
    }
    sent
}

fn cursor_of<S: Store>(f: &Fixture<S>, hook: WebhookId) -> Option<EventId> {
    f.shop
        .webhooks()
        .get(OPERATOR, hook)
        .must("read the subscription")
        .delivery
        .delivered_through
}

/// A run records its progress when [`RECORD_BATCH`] deliveries or [`RECORD_INTERVAL`] have
/// passed, not after every event; a record keeps the batch's latest success as an attempt,
/// and the subscription counts every delivery.
pub fn a_run_records_its_progress_in_batches<S: Store>(store: S) {
    let f = Fixture::new(store);
    let hook = f.webhook_to(&[EventType::PetCreated]);
    pets(&f, "Early", 3);
    let mut run = f.begin_run(hook.id, "node-a").must("a run");
    let sent = deliver_all(&f, &mut run, 3);
    assert_eq!(sent.len(), 3);
    assert!(
        !run.record_due(f.clock.now()),
        "three deliveries at once need no record yet"
    );
    f.clock
        .advance(chrono::TimeDelta::from_std(RECORD_INTERVAL).must("a short interval"));
    assert!(run.record_due(f.clock.now()), "the interval has passed");
    assert!(f.record(&mut run, false).1);
    assert!(!run.record_due(f.clock.now()), "nothing new since");
    let state = f
        .shop
        .webhooks()
        .get(OPERATOR, hook.id)
        .must("read")
        .delivery;
    assert_eq!(state.delivered_events, 3);
    assert_eq!(
        state.delivered_through.map(EventId::get),
        sent.last().copied()
    );

    let batch = usize::try_from(RECORD_BATCH).must("a small batch");
    pets(&f, "Later", RECORD_BATCH);
    assert!(f.read_ahead(&mut run));
    let more = deliver_all(&f, &mut run, batch);
    assert_eq!(more.len(), batch);
    assert!(
        run.record_due(f.clock.now()),
        "a full batch is recorded without waiting"
    );
    assert!(f.record(&mut run, true).1);
    let attempts = f
        .shop
        .webhooks()
        .deliveries(OPERATOR, hook.id, &DeliveryQuery::default())
        .must("list")
        .items;
    assert_eq!(
        attempts
            .iter()
            .map(|a| (a.event_id.get(), a.outcome))
            .collect::<Vec<_>>(),
        vec![
            (sent[2], DeliveryOutcome::Delivered),
            (more[batch - 1], DeliveryOutcome::Delivered),
        ],
        "one success kept per record: the latest"
    );
    let state = f
        .shop
        .webhooks()
        .get(OPERATOR, hook.id)
        .must("read")
        .delivery;
    assert_eq!(state.delivered_events, 3 + RECORD_BATCH);
}

/// A sender that stops without recording (it crashed) holds the lease until it runs out;
/// the next run then starts after the last record: what was sent since is sent again, in
/// order, and no event is skipped. The crashed run's late record writes nothing.
pub fn a_run_cut_short_is_resumed_from_its_last_record<S: Store>(store: S) {
    let f = Fixture::new(store);
    let hook = f.webhook_to(&[EventType::PetCreated]);
    pets(&f, "Pet", 6);
    let mut crashed = f.begin_run(hook.id, "node-a").must("a run");
    let first = deliver_all(&f, &mut crashed, 2);
    assert!(f.record(&mut crashed, false).1);
    let unrecorded = deliver_all(&f, &mut crashed, 2);
    assert!(
        f.begin_run(hook.id, "node-b").is_none(),
        "the crashed sender's lease still runs"
    );
    f.clock.advance(chrono::Duration::seconds(31));
    let mut resumed = f.begin_run(hook.id, "node-b").must("a run after the lease");
    let rest = deliver_all(&f, &mut resumed, 100);
    assert_eq!(
        rest.get(..2),
        Some(&unrecorded[..]),
        "what was sent since the last record is sent again, first"
    );
    let mut all = first.clone();
    all.extend(&rest);
    assert_eq!(all.len(), 6, "every event, none skipped: {all:?}");
    assert!(all.windows(2).all(|w| w[0] < w[1]), "in order: {all:?}");
    assert!(f.record(&mut resumed, true).1);
    assert!(
        !f.record(&mut crashed, true).1,
        "the crashed run's record comes too late"
    );
    assert_eq!(
        cursor_of(&f, hook.id).map(EventId::get),
        rest.last().copied()
    );
}

/// An admin has a subscription's events sent again from an event id: the cursor goes back,
/// a run in progress loses its lease and its next record, and the next run starts at that
/// event. A resend may not skip events, and is the admin's alone.
pub fn an_admin_has_events_sent_again_from_an_event_id<S: Store>(store: S) {
    let f = Fixture::new(store);
    let webhooks = f.shop.webhooks();
    let hook = f.webhook_to(&[EventType::PetCreated]);
    pets(&f, "Pet", 4);
    let mut run = f.begin_run(hook.id, "node-a").must("a run");
    let sent = deliver_all(&f, &mut run, 100);
    assert_eq!(sent.len(), 4);
    assert!(f.record(&mut run, false).1, "recorded, lease kept");

    let from = EventId::new(sent[1]).must("an event id");
    let resent = webhooks
        .resend(OPERATOR, hook.id, from, Always)
        .must("resend");
    assert_eq!(
        resent.delivery.delivered_through.map(EventId::get),
        Some(sent[1] - 1)
    );
    assert_eq!(cursor_of(&f, hook.id), resent.delivery.delivered_through);
    assert!(
        !f.record(&mut run, true).1,
        "the run in progress lost its lease"
    );
    let mut again = f.begin_run(hook.id, "node-b").must("a run at once");
    assert_eq!(deliver_all(&f, &mut again, 100), sent[1..].to_vec());
    assert!(f.record(&mut again, true).1);

    let latest = cursor_of(&f, hook.id).must("a cursor").get();
    let beyond = EventId::new(latest + 2).must("an event id");
    assert!(matches!(
        webhooks.resend(OPERATOR, hook.id, beyond, Always),
        Err(DomainError::InvalidTransition(_))
    ));
    let next = EventId::new(latest + 1).must("an event id");
    webhooks
        .resend(OPERATOR, hook.id, next, Always)
        .must("from the next event: nothing to send again, nothing skipped");
    assert_eq!(cursor_of(&f, hook.id).map(EventId::get), Some(latest));
    assert!(matches!(
        webhooks.resend(customer(7), hook.id, from, Always),
        Err(DomainError::Forbidden { .. })
    ));
    let unknown = WebhookId::new(hook.id.get() + 100).must("an id");
    assert_eq!(
        webhooks.resend(OPERATOR, unknown, from, Always).map(|_| ()),
        Err(DomainError::not_found(Resource::Webhook, unknown))
    );
}

//! Webhooks: subscriptions, delivery in order, retries, and the attempts kept.

use super::{Fixture, OPERATOR, start_time};
use crate::Clock;
use crate::testkit::{Must, all_pages};
use crate::{
    Always, DeliveryOutcome, DeliveryQuery, DomainError, EventType, PageSize, Resource, Store,
    WebhookQuery,
};

/// A subscription receives, in order, the events of its types recorded after it was created;
/// the cursor moves only past events answered with a 2xx; a failure ends the run, waits out
/// the retry delay and the same event comes again; failures and each batch's latest success
/// are listed, and the subscription counts its deliveries.
pub fn webhooks_deliver_matching_events_in_order_and_retry_failures<S: Store>(store: S) {
    use EventType::*;
    let f = Fixture::new(store);
    let (webhooks, events) = (f.shop.webhooks(), f.shop.events());
    let before = f.pet_with_stock("Before", 3);
    f.order(before.id, 1).must("an order before the webhook");
    let hook = f.webhook_to(&[OrderPlaced, OrderCancelled]);
    assert_eq!(
        hook.delivery.delivered_through,
        events.last_id(OPERATOR).must("the latest id"),
        "a new subscription starts after the latest event"
    );
    let status = f.delivery_status(hook.id);
    assert_eq!(
        (status.lag, status.failed_attempts, status.due),
        (0, 0, false),
        "nothing owed"
    );

    let rex = f.pet_with_stock("Rex", 5);
    let first = f.order(rex.id, 1).must("order");
    f.shop
        .orders()
        .cancel(OPERATOR, first.id, Always)
        .must("cancel");
    let status = f.delivery_status(hook.id);
    assert!(status.due && status.lag >= 2, "owed: {status:?}");

    let mut run = f.begin_run(hook.id, "node-a").must("a run");
    let pending = run.next().must("a delivery");
    assert_eq!(pending.event.event_type, OrderPlaced);
    assert_eq!(pending.attempt, 1);
    assert_eq!(pending.url.as_str(), "https://hooks.example.com/petstore");
    let placed_id = pending.event.id;
    f.answer(&mut run, 204);
    let pending = run.next().must("a delivery");
    assert_eq!(pending.event.event_type, OrderCancelled);
    assert!(pending.event.id > placed_id);
    f.answer(&mut run, 503);
    assert_eq!(run.next(), None, "a failure ends the run");
    assert!(
        run.record_due(f.clock.now()),
        "a failure is recorded at once"
    );
    let (record, written) = f.record(&mut run, true);
    assert!(written);
    let cursor = record.state().delivered_through.must("a cursor");
    assert!(
        cursor >= placed_id && cursor < pending.event.id,
        "past the delivered event, short of the failed one: {cursor}"
    );
    assert!(
        !webhooks.record_run(&record).must("record again"),
        "a record counts once: the cursor is no longer where it expects"
    );
    let retry_at = start_time() + chrono::Duration::seconds(5);
    let state = webhooks.get(OPERATOR, hook.id).must("read").delivery;
    assert_eq!(
        (state.failed_attempts, state.next_attempt_at),
        (1, Some(retry_at))
    );
    let status = f.delivery_status(hook.id);
    assert!(!status.due, "waiting");
    assert_eq!(
        status.failed_attempts, 1,
        "the failure counts while it waits"
    );
    assert!(f.begin_run(hook.id, "node-a").is_none(), "waiting");

    f.clock.set(retry_at);
    assert!(f.delivery_status(hook.id).due);
    let mut run = f.begin_run(hook.id, "node-a").must("the retry");
    let again = run.next().must("the retry");
    assert_eq!((again.event.id, again.attempt), (pending.event.id, 2));
    f.answer(&mut run, 500);
    f.record(&mut run, true);
    assert_eq!(
        webhooks
            .get(OPERATOR, hook.id)
            .must("read")
            .delivery
            .next_attempt_at,
        Some(retry_at + chrono::Duration::seconds(10)),
        "the delay doubles"
    );
    assert_eq!(
        f.delivery_status(hook.id).failed_attempts,
        2,
        "each failure counts"
    );
    f.clock.set(retry_at + chrono::Duration::seconds(10));
    let mut run = f
        .begin_run(hook.id, "node-b")
        .must("the retry, by another node");
    assert_eq!(run.next().must("the retry").attempt, 3);
    f.answer(&mut run, 200);
    assert_eq!(run.next(), None);
    assert!(!f.read_ahead(&mut run), "up to date");
    assert!(f.record(&mut run, true).1);
    let state = webhooks.get(OPERATOR, hook.id).must("read").delivery;
    assert_eq!(
        state.delivered_through,
        events.last_id(OPERATOR).must("latest"),
        "delivered, then past the later events of other types"
    );
    assert_eq!((state.failed_attempts, state.next_attempt_at), (0, None));
    assert_eq!(
        f.delivery_status(hook.id).failed_attempts,
        0,
        "a success ends the count"
    );
    assert_eq!(state.delivered_events, 2);

    let (attempts, _) = all_pages(|after| {
        let query = DeliveryQuery {
            after,
            limit: PageSize::new(2).must("size"),
        };
        webhooks
            .deliveries(OPERATOR, hook.id, &query)
            .must("list deliveries")
    });
    let summary: Vec<_> = attempts
        .iter()
        .map(|a| (a.event_type, a.attempt, a.outcome, a.status_code))
        .collect();
    use DeliveryOutcome::{Delivered, Failed};
    assert_eq!(
        summary,
        vec![
            (OrderPlaced, 1, Delivered, Some(204)),
            (OrderCancelled, 1, Failed, Some(503)),
            (OrderCancelled, 2, Failed, Some(500)),
            (OrderCancelled, 3, Delivered, Some(200)),
        ]
    );
}

/// Events a subscription does not receive are stepped over and its cursor moves past them;
/// subscriptions are listed, and deleting one forgets it and its attempts.
pub fn webhooks_skip_other_events_and_can_be_deleted<S: Store>(store: S) {
    let f = Fixture::new(store);
    let webhooks = f.shop.webhooks();
    let orders = f.webhook_to(&[EventType::OrderPlaced]);
    let pets = f.webhook_to(&[EventType::PetCreated, EventType::PetDeleted]);
    let rex = f.pet_with_stock("Rex", 2);
    let mut run = f.begin_run(orders.id, "node-a").must("a run");
    assert_eq!(run.next(), None, "nothing of its types");
    assert!(f.record(&mut run, true).1);
    assert_eq!(
        webhooks
            .get(OPERATOR, orders.id)
            .must("read")
            .delivery
            .delivered_through,
        f.shop.events().last_id(OPERATOR).must("latest"),
        "the cursor moved past the events it does not receive"
    );
    let mut run = f.begin_run(pets.id, "node-a").must("a run");
    let pending = run.next().must("pet.created");
    assert_eq!(pending.event.subject, format!("pets/{}", rex.id));

    let (listed, _) = all_pages(|after| {
        let query = WebhookQuery {
            after,
            limit: PageSize::new(1).must("size"),
        };
        webhooks.list(OPERATOR, &query).must("list webhooks")
    });
    assert_eq!(
        listed.iter().map(|w| w.id).collect::<Vec<_>>(),
        vec![orders.id, pets.id]
    );

    f.answer(&mut run, 200);
    webhooks.delete(OPERATOR, pets.id, Always).must("delete");
    for refused in [
        webhooks.get(OPERATOR, pets.id).map(|_| ()),
        webhooks.delete(OPERATOR, pets.id, Always),
        webhooks
            .deliveries(OPERATOR, pets.id, &DeliveryQuery::default())
            .map(|_| ()),
    ] {
        assert_eq!(
            refused,
            Err(DomainError::not_found(Resource::Webhook, pets.id))
        );
    }
    assert!(f.begin_run(pets.id, "node-a").is_none(), "gone");
    assert!(
        !f.record(&mut run, true).1,
        "a record of a deleted subscription writes nothing"
    );
    let statuses = webhooks.delivery_status().must("status");
    assert_eq!(
        statuses.iter().map(|s| (s.id, s.due)).collect::<Vec<_>>(),
        vec![(orders.id, false)],
        "up to date: nothing to do"
    );
    f.order(rex.id, 1).must("an order");
    assert!(
        f.delivery_status(orders.id).due,
        "due again, now that it has an event"
    );
}

/// A store keeps the latest attempts of a subscription when told to forget the older ones,
/// and leaves other subscriptions' attempts alone.
pub fn old_delivery_attempts_are_pruned<S: Store>(store: S) {
    let f = Fixture::new(store);
    let webhooks = f.shop.webhooks();
    let pruned = f.webhook_to(&[EventType::PetCreated]);
    let other = f.webhook_to(&[EventType::PetCreated]);
    f.pet_with_stock("Rex", 0);
    for hook in [pruned.id, other.id] {
        for _ in 0..4 {
            let mut run = f.begin_run(hook, "node-a").must("a run");
            f.answer(&mut run, 500);
            assert!(f.record(&mut run, true).1);
            f.clock.advance(chrono::Duration::hours(2));
        }
    }
    let attempts = |hook| {
        webhooks
            .deliveries(OPERATOR, hook, &DeliveryQuery::default())
            .must("list")
            .items
            .into_iter()
            .map(|a| a.attempt)
            .collect::<Vec<_>>()
    };
    assert_eq!(attempts(pruned.id), vec![1, 2, 3, 4]);
    f.shop
        .store()
        .write(|tx| tx.prune_delivery_attempts(pruned.id, 2))
        .must("prune");
    assert_eq!(attempts(pruned.id), vec![3, 4], "the latest two are kept");
    assert_eq!(attempts(other.id), vec![1, 2, 3, 4], "others untouched");
    f.shop
        .store()
        .write(|tx| tx.prune_delivery_attempts(pruned.id, 5))
        .must("prune nothing");
    assert_eq!(attempts(pruned.id), vec![3, 4]);
}

/// A subscription's delivery lease has one holder at a time: others are refused until the
/// holder releases it or its lease runs out; the holder renews its own; leases of other
/// subscriptions are separate, and a deleted subscription cannot be claimed.
pub fn one_sender_holds_a_subscription_at_a_time<S: Store>(store: S) {
    let f = Fixture::new(store);
    let webhooks = f.shop.webhooks();
    let hook = f.webhook_to(&[EventType::PetCreated]);
    let other = f.webhook_to(&[EventType::PetCreated]);
    let lease = std::time::Duration::from_secs(30);

    assert!(webhooks.claim(hook.id, "node-a", lease).must("claim"));
    assert!(
        !webhooks.claim(hook.id, "node-b", lease).must("claim"),
        "held by a"
    );
    assert!(
        webhooks.claim(other.id, "node-b", lease).must("claim"),
        "another subscription"
    );
    f.clock.advance(chrono::Duration::seconds(20));
    assert!(
        webhooks.claim(hook.id, "node-a", lease).must("renew"),
        "a renews"
    );
    f.clock.advance(chrono::Duration::seconds(20));
    assert!(
        !webhooks.claim(hook.id, "node-b", lease).must("claim"),
        "the renewed lease still runs"
    );
    webhooks
        .release(hook.id, "node-b")
        .must("release by another");
    assert!(
        !webhooks.claim(hook.id, "node-b", lease).must("claim"),
        "only a can release"
    );
    webhooks.release(hook.id, "node-a").must("release");
    assert!(
        webhooks.claim(hook.id, "node-b", lease).must("claim"),
        "released"
    );

    // A holder that stops renewing (it died) loses the lease when it runs out.
    f.clock.advance(chrono::Duration::seconds(31));
    let renew = |holder: &str| {
        let until = f.clock.now() + chrono::Duration::seconds(30);
        f.shop
            .store()
            .write(|tx| tx.renew_webhook(hook.id, holder, until))
            .must("renew")
    };
    assert!(
        renew("node-b"),
        "a holder renews its own lease even once it ran out"
    );
    f.clock.advance(chrono::Duration::seconds(31));
    assert!(
        webhooks.claim(hook.id, "node-a", lease).must("claim"),
        "expired"
    );
    assert!(!renew("node-b"), "a renewal never takes another's lease");
    webhooks.release(hook.id, "node-a").must("release");
    assert!(!renew("node-a"), "nor one nobody holds");
    assert!(webhooks.claim(hook.id, "node-a", lease).must("claim"));
    f.shop
        .store()
        .write(|tx| tx.revoke_webhook_lease(hook.id))
        .must("revoke");
    assert!(!renew("node-a"), "a revoked lease is nobody's");
    assert!(webhooks.claim(hook.id, "node-b", lease).must("claim"));

    webhooks
        .delete(OPERATOR, hook.id, crate::Always)
        .must("delete");
    assert!(
        !webhooks.claim(hook.id, "node-b", lease).must("claim"),
        "gone"
    );
}

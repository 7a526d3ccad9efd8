//! Webhooks: subscriptions, delivery in order, retries, and the attempts kept.

use super::{Fixture, OPERATOR, start_time};
use crate::testkit::{Must, all_pages};
use crate::{
    Always, AttemptReport, DeliveryOutcome, DeliveryQuery, DomainError, EventType, EventTypes,
    NewWebhook, PageSize, Resource, RetryPolicy, Store, Webhook, WebhookQuery, WebhookSecret,
    WebhookUrl,
};

fn webhook_to(f: &Fixture<impl Store>, types: &[EventType]) -> Webhook {
    let new = NewWebhook {
        url: WebhookUrl::parse("https://hooks.example.com/petstore").must("a valid URL"),
        events: EventTypes::new(types.to_vec()).must("valid event types"),
    };
    f.shop
        .webhooks()
        .create(OPERATOR, new, &WebhookSecret::from_random([9; 32]))
        .must("create a webhook")
}

fn answered(status: u16) -> AttemptReport {
    AttemptReport {
        status_code: Some(status),
        error: None,
    }
}

/// A subscription receives, one at a time and in order, the events of its types recorded after
/// it was created; the cursor moves only on a 2xx; a failure waits out the retry delay and the
/// same event comes again; every attempt is listed.
pub fn webhooks_deliver_matching_events_in_order_and_retry_failures<S: Store>(store: S) {
    use EventType::*;
    let f = Fixture::new(store);
    let (webhooks, events) = (f.shop.webhooks(), f.shop.events());
    let policy = RetryPolicy::default();
    let before = f.pet_with_stock("Before", 3);
    f.order(before.id, 1).must("an order before the webhook");
    let hook = webhook_to(&f, &[OrderPlaced, OrderCancelled]);
    assert_eq!(
        hook.delivery.delivered_through,
        events.last_id(OPERATOR).must("the latest id"),
        "a new subscription starts after the latest event"
    );
    assert_eq!(webhooks.next_delivery(hook.id).must("next"), None);

    let rex = f.pet_with_stock("Rex", 5);
    let first = f.order(rex.id, 1).must("order");
    f.shop
        .orders()
        .cancel(OPERATOR, first.id, Always)
        .must("cancel");

    let pending = webhooks
        .next_delivery(hook.id)
        .must("next")
        .must("a delivery");
    assert_eq!(pending.event.event_type, OrderPlaced);
    assert_eq!(pending.attempt, 1);
    assert_eq!(pending.url.as_str(), "https://hooks.example.com/petstore");
    let placed_id = pending.event.id;
    let attempt = webhooks
        .record_delivery(&pending, answered(204), &policy)
        .must("record")
        .must("a recorded attempt");
    assert_eq!(attempt.outcome, DeliveryOutcome::Delivered);
    assert_eq!(
        webhooks
            .record_delivery(&pending, answered(204), &policy)
            .must("record again"),
        None,
        "a second report on a delivered event counts for nothing"
    );

    let pending = webhooks
        .next_delivery(hook.id)
        .must("next")
        .must("a delivery");
    assert_eq!(pending.event.event_type, OrderCancelled);
    assert!(pending.event.id > placed_id);
    let failed = webhooks
        .record_delivery(&pending, answered(503), &policy)
        .must("record")
        .must("a recorded attempt");
    assert_eq!(failed.outcome, DeliveryOutcome::Failed);
    let retry_at = start_time() + chrono::Duration::seconds(5);
    assert_eq!(failed.next_attempt_at, Some(retry_at));
    assert_eq!(
        webhooks.next_delivery(hook.id).must("next"),
        None,
        "waiting"
    );
    assert!(!webhooks.due().must("due").contains(&hook.id));

    f.clock.set(retry_at);
    assert!(webhooks.due().must("due").contains(&hook.id));
    let again = webhooks
        .next_delivery(hook.id)
        .must("next")
        .must("the retry");
    assert_eq!((again.event.id, again.attempt), (pending.event.id, 2));
    let failed = webhooks
        .record_delivery(&again, answered(500), &policy)
        .must("record")
        .must("a recorded attempt");
    assert_eq!(
        failed.next_attempt_at,
        Some(retry_at + chrono::Duration::seconds(10)),
        "the delay doubles"
    );
    f.clock.set(retry_at + chrono::Duration::seconds(10));
    let third = webhooks
        .next_delivery(hook.id)
        .must("next")
        .must("the retry");
    assert_eq!(third.attempt, 3);
    webhooks
        .record_delivery(&third, answered(200), &policy)
        .must("record");
    assert_eq!(
        webhooks.next_delivery(hook.id).must("next"),
        None,
        "up to date"
    );
    let state = webhooks.get(OPERATOR, hook.id).must("read").delivery;
    assert_eq!(
        state.delivered_through,
        events.last_id(OPERATOR).must("latest"),
        "delivered, then past the later events of other types"
    );
    assert_eq!((state.failed_attempts, state.next_attempt_at), (0, None));

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
    let orders = webhook_to(&f, &[EventType::OrderPlaced]);
    let pets = webhook_to(&f, &[EventType::PetCreated, EventType::PetDeleted]);
    let rex = f.pet_with_stock("Rex", 2);
    assert_eq!(webhooks.next_delivery(orders.id).must("next"), None);
    assert_eq!(
        webhooks
            .get(OPERATOR, orders.id)
            .must("read")
            .delivery
            .delivered_through,
        f.shop.events().last_id(OPERATOR).must("latest"),
        "the cursor moved past the events it does not receive"
    );
    let pending = webhooks
        .next_delivery(pets.id)
        .must("next")
        .must("pet.created");
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

    webhooks
        .record_delivery(&pending, answered(500), &RetryPolicy::default())
        .must("record");
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
    assert_eq!(webhooks.next_delivery(pets.id).must("next"), None);
    assert_eq!(
        webhooks
            .record_delivery(&pending, answered(200), &RetryPolicy::default())
            .must("a late report"),
        None,
        "a report on a deleted subscription records nothing"
    );
    assert_eq!(
        webhooks.due().must("due"),
        vec![],
        "up to date: nothing to do"
    );
    f.order(rex.id, 1).must("an order");
    assert_eq!(
        webhooks.due().must("due"),
        vec![orders.id],
        "only the remaining subscription, now that it has an event"
    );
}

/// A store keeps the latest attempts of a subscription when told to forget the older ones,
/// and leaves other subscriptions' attempts alone.
pub fn old_delivery_attempts_are_pruned<S: Store>(store: S) {
    let f = Fixture::new(store);
    let webhooks = f.shop.webhooks();
    let pruned = webhook_to(&f, &[EventType::PetCreated]);
    let other = webhook_to(&f, &[EventType::PetCreated]);
    f.pet_with_stock("Rex", 0);
    let policy = RetryPolicy::default();
    for hook in [pruned.id, other.id] {
        for _ in 0..4 {
            let pending = webhooks
                .next_delivery(hook)
                .must("next")
                .must("pet.created");
            webhooks
                .record_delivery(&pending, answered(500), &policy)
                .must("record");
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
    let hook = webhook_to(&f, &[EventType::PetCreated]);
    let other = webhook_to(&f, &[EventType::PetCreated]);
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
    assert!(
        webhooks.claim(hook.id, "node-a", lease).must("claim"),
        "expired"
    );

    webhooks
        .delete(OPERATOR, hook.id, crate::Always)
        .must("delete");
    assert!(
        !webhooks.claim(hook.id, "node-b", lease).must("claim"),
        "gone"
    );
}

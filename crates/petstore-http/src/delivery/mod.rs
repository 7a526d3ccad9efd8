//! The webhook dispatcher: a background task that delivers every subscription what it is owed.
//!
//! It wakes every `poll` interval, asks the domain which subscriptions are due, and starts one
//! drain per due subscription that is not already draining. A drain sends a subscription's
//! events one at a time, in order, recording each attempt before the next
//! ([`next_delivery`](petstore_core::WebhookUseCases::next_delivery) /
//! [`record_delivery`](petstore_core::WebhookUseCases::record_delivery)); it stops at the first
//! failure, and the subscription is due again when its retry delay has passed. A slow or dead
//! receiver therefore holds up only its own subscription. All of a subscription's state is in
//! the database, so a restart picks up where the last process stopped; an attempt cut short
//! by the stop is sent again (at least once).

mod client;

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;
use std::sync::Arc;

use petstore_core::{DeliveryOutcome, WebhookId};

use crate::state::AppState;
pub use crate::state::DeliverySettings;
use client::WebhookClient;
pub use client::tls_config;

/// Runs the dispatcher until the service stops. Call it on the actix system's thread: the
/// HTTP client it uses is bound to that thread. `node` names this process among the nodes
/// sharing the database: a subscription is drained by the node holding its lease.
pub async fn run(state: AppState, tls: Arc<rustls::ClientConfig>, node: Rc<str>) {
    let settings = state.delivery().clone();
    let client = Rc::new(WebhookClient::new(
        tls,
        settings.timeout,
        settings.allow_private_targets,
    ));
    let draining: Rc<RefCell<HashSet<WebhookId>>> = Rc::default();
    while !state.is_stopping() {
        match state.read(|shop| shop.webhooks().due()).await {
            Ok(due) => {
                state.metrics().webhooks_due(due.len());
                for id in due {
                    if draining.borrow().len() >= settings.concurrency.max(1) {
                        // The rest wait for the next round; their order is kept anyway.
                        break;
                    }
                    if draining.borrow_mut().insert(id) {
                        let drain = drain(state.clone(), Rc::clone(&client), id, Rc::clone(&node));
                        let mark = Draining {
                            set: Rc::clone(&draining),
                            id,
                        };
                        actix_web::rt::spawn(async move {
                            let _mark = mark;
                            drain.await;
                        });
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "cannot read the webhooks due"),
        }
        actix_web::rt::time::sleep(settings.poll).await;
    }
}

/// A subscription being drained, until dropped: when its drain ends, however it ends (a panic
/// included), the subscription may be drained again.
struct Draining {
    set: Rc<RefCell<HashSet<WebhookId>>>,
    id: WebhookId,
}

impl Drop for Draining {
    fn drop(&mut self) {
        self.set.borrow_mut().remove(&self.id);
    }
}

/// Sends subscription `id` its events, in order, while this node holds its lease, until it is
/// up to date, an attempt fails, or the service stops; then gives the lease up.
async fn drain(state: AppState, client: Rc<WebhookClient>, id: WebhookId, node: Rc<str>) {
    sends(&state, &client, id, &node).await;
    let holder = node.to_string();
    if let Err(error) = state
        .write(move |shop| shop.webhooks().release(id, &holder))
        .await
    {
        // The lease runs out by itself.
        tracing::warn!(webhook_id = %id, %error, "cannot release a webhook lease");
    }
}

async fn sends(state: &AppState, client: &WebhookClient, id: WebhookId, node: &Rc<str>) {
    let retry = state.delivery().retry;
    let lease = state.delivery().lease;
    while !state.is_stopping() {
        // Claimed (or renewed) before every attempt: another node may hold it, and a node
        // that stops renewing gives it up when the lease ends.
        let holder = node.to_string();
        match state
            .write(move |shop| shop.webhooks().claim(id, &holder, lease))
            .await
        {
            Ok(true) => {}
            Ok(false) => return,
            Err(error) => {
                tracing::warn!(webhook_id = %id, %error, "cannot claim a webhook");
                return;
            }
        }
        let pending = match state
            .write(move |shop| shop.webhooks().next_delivery(id))
            .await
        {
            Ok(Some(pending)) => pending,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(webhook_id = %id, %error, "cannot read the next delivery");
                return;
            }
        };
        let timestamp = state.clock().now().timestamp();
        // The attempt's span, when traces are on, is the receiver's parent; otherwise the
        // span the event was caused under is, as it was recorded.
        let span = state
            .traces()
            .map(|traces| traces.delivery_attempt(&pending));
        let trace = match &span {
            Some(span) => span.traceparent(),
            None => pending.event.traceparent.clone(),
        };
        let (report, took) = client.deliver(&pending, trace.as_ref(), timestamp).await;
        if let Some(span) = span {
            span.finish_attempt(&report);
        }
        let outcome = report.outcome();
        state.metrics().webhook_attempt(outcome, took.as_secs_f64());
        // A failed attempt is something an operator may have to act on: WARN, not INFO.
        macro_rules! attempt {
            ($level:ident) => {
                tracing::$level!(
                    webhook_id = %id,
                    event_id = %pending.event.id,
                    attempt = pending.attempt,
                    outcome = outcome.as_str(),
                    status = report.status_code,
                    error = report.error.as_deref(),
                    "webhook delivery"
                )
            };
        }
        if outcome == DeliveryOutcome::Failed {
            attempt!(warn);
        } else {
            attempt!(info);
        }
        let recorded = state
            .write(move |shop| {
                shop.webhooks()
                    .record_delivery(&pending, report.clone(), &retry)
            })
            .await;
        if let Err(error) = recorded {
            // Not recorded, so not delivered as far as the database knows: sent again later.
            tracing::warn!(webhook_id = %id, %error, "cannot record a delivery attempt");
            return;
        }
        if outcome == DeliveryOutcome::Failed {
            return;
        }
    }
}

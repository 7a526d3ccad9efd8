//! The webhook dispatcher: a background task that delivers every subscription what it is owed.
//!
//! It wakes every `poll` interval, asks the domain where every subscription stands
//! ([`delivery_status`](petstore_core::WebhookUseCases::delivery_status), which also feeds the
//! lag and failed-attempts gauges), and starts one drain per due subscription that is not already draining. A
//! drain is one [`DeliveryRun`]: it takes the subscription's lease, reads the feed ahead in
//! pages, and sends the events back to back over the client's kept-alive connection to the
//! receiver, recording its progress in batches and renewing the lease with each record. It
//! stops at the first failure (the subscription is due again when its retry delay has
//! passed), when it has caught up, or when the service stops, and then records and gives the
//! lease up. A slow or dead receiver therefore holds up only its own subscription. A crash
//! sends again what was sent since the last record (at least once;
//! [`RECORD_BATCH`](petstore_core::RECORD_BATCH) events at most).

mod client;

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;
use std::sync::Arc;

use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::LocalBoxFuture;
use petstore_core::{
    AttemptReport, DeliveryOutcome, DeliveryRun, PendingDelivery, RunRecord, WebhookId,
};

use crate::error::ApiError;
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
        match look(&state).await {
            Ok(due) => {
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
            Err(error) => tracing::warn!(%error, "cannot read where the webhooks stand"),
        }
        actix_web::rt::time::sleep(settings.poll).await;
    }
}

/// The dispatcher's look at the subscriptions, one round of [`run`]: where each stands, into
/// the metrics, and the ids of those due, by id.
pub async fn look(state: &AppState) -> Result<Vec<WebhookId>, ApiError> {
    let statuses = state
        .read_primary(|shop| shop.webhooks().delivery_status())
        .await?;
    state.metrics().webhook_status(&statuses);
    Ok(statuses.iter().filter(|s| s.due).map(|s| s.id).collect())
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

/// Sends subscription `id` its events, in order, in one run while this node holds its
/// lease, until it is up to date, an attempt fails, or the service stops; then records where
/// it got and gives the lease up.
async fn drain(state: AppState, client: Rc<WebhookClient>, id: WebhookId, node: Rc<str>) {
    let lease = state.delivery().lease;
    let holder = node.to_string();
    let begun = state
        .write(move |shop| shop.webhooks().begin_delivery(id, &holder, lease))
        .await;
    let mut run = match begun {
        Ok(Some(run)) => run,
        Ok(None) => return,
        Err(error) => {
            tracing::warn!(webhook_id = %id, %error, "cannot begin a webhook delivery run");
            return;
        }
    };
    if sends(&state, &client, &mut run).await {
        // Whatever it says, the lease runs out by itself if this record is lost.
        record(&state, &mut run, true).await;
    }
}

/// The longest retry delay a run waits out itself; after a longer one, the subscription waits
/// for the dispatcher, and its run's place goes to another subscription.
const RETRY_IN_RUN: Duration = Duration::from_secs(1);

/// Sends the run's events until it has caught up, failed or the service stops, recording as
/// it goes. Returns whether the run still holds the lease (its last record was written).
///
/// A record is written while the sending goes on: waiting for each commit would stall the
/// receiver for a disk flush every batch. Records are written one at a time, and an attempt
/// that could outlast the lease waits for a confirmed renewal first.
async fn sends(state: &AppState, client: &WebhookClient, run: &mut DeliveryRun) -> bool {
    let settings = state.delivery();
    // An attempt may take the whole timeout: the lease must outlast it.
    let margin = settings.timeout + Duration::from_secs(1);
    let mut in_flight: Option<Recording> = None;
    while !state.is_stopping() {
        if let Some(flight) = in_flight.as_mut()
            && let Some(written) = (&mut flight.written).now_or_never()
            && let Some(flight) = in_flight.take()
            && !settle(run, &(flight.record, written))
        {
            return false;
        }
        let now = state.clock().now();
        if run.lease_ends_within(now, margin) {
            let confirmed = match in_flight.take() {
                Some(flight) => settle(run, &flight.finish().await),
                None => true,
            };
            if !confirmed
                || (run.lease_ends_within(now, margin) && !record(state, run, false).await)
            {
                return false;
            }
        }
        if in_flight.is_none() && !run.has_failed() && run.record_due(now) {
            in_flight = Some(Recording::start(state, run, false));
        }
        let Some(pending) = run.next() else {
            if run.has_failed() {
                // A short retry delay is waited out here, holding the lease: giving the run up
                // would add a dispatcher round and two writes to every passing failure.
                if let Some(flight) = in_flight.take()
                    && !settle(run, &flight.finish().await)
                {
                    return false;
                }
                if !record(state, run, false).await {
                    return false;
                }
                let wait = run
                    .retry_at()
                    .and_then(|at| (at - state.clock().now()).to_std().ok())
                    .unwrap_or_default();
                if wait > RETRY_IN_RUN || run.lease_ends_within(state.clock().now(), wait + margin)
                {
                    break;
                }
                actix_web::rt::time::sleep(wait).await;
                run.retry();
                continue;
            }
            let after = run.read_from();
            match state
                .read_primary(move |shop| shop.webhooks().read_ahead(after))
                .await
            {
                Ok(page) => {
                    if run.take_page(page) {
                        continue;
                    }
                    break;
                }
                Err(error) => {
                    tracing::warn!(webhook_id = %run.webhook_id(), %error, "cannot read the events ahead");
                    break;
                }
            }
        };
        let report = send(state, client, &pending).await;
        run.attempted(&report, state.clock().now());
    }
    match in_flight {
        Some(flight) => settle(run, &flight.finish().await),
        None => true,
    }
}

/// A record of a run being written.
struct Recording {
    record: RunRecord,
    written: LocalBoxFuture<'static, Result<bool, ApiError>>,
}

impl Recording {
    /// Starts writing the run's progress, renewing its lease, or giving it up if `release`.
    fn start(state: &AppState, run: &DeliveryRun, release: bool) -> Self {
        let settings = state.delivery();
        let record = run.record(
            state.clock().now(),
            settings.lease,
            &settings.retry,
            release,
        );
        let writing = record.clone();
        let written = state.write(move |shop| shop.webhooks().record_run(&writing));
        Self {
            record,
            written: Box::pin(written),
        }
    }

    /// Waits for the write: the record and what became of it.
    async fn finish(self) -> (RunRecord, Result<bool, ApiError>) {
        (self.record, self.written.await)
    }
}

/// Writes the run's progress and waits for it; see [`settle`].
async fn record(state: &AppState, run: &mut DeliveryRun, release: bool) -> bool {
    settle(run, &Recording::start(state, run, release).finish().await)
}

/// Takes what became of a record: the run goes on from it if it was written. Returns whether
/// it was: when not, the run has lost the subscription (an admin's resend, a deletion, a
/// lease that ran out and was taken) or the store failed, and must end; what it did not
/// record is sent again by the next run.
fn settle(run: &mut DeliveryRun, (record, written): &(RunRecord, Result<bool, ApiError>)) -> bool {
    match written {
        Ok(true) => {
            if record.delivered() > 0 {
                tracing::info!(
                    webhook_id = %run.webhook_id(),
                    delivered = record.delivered(),
                    through = record.state().delivered_through.map_or(0, |id| id.get()),
                    "webhook deliveries recorded"
                );
            }
            run.recorded(record);
            true
        }
        Ok(false) => {
            tracing::info!(webhook_id = %run.webhook_id(), "a webhook delivery run lost its lease; what it did not record is sent again");
            false
        }
        Err(error) => {
            tracing::warn!(webhook_id = %run.webhook_id(), %error, "cannot record webhook deliveries; what was not recorded is sent again");
            false
        }
    }
}

/// POSTs one event, with its span, metrics and log line, and says what happened.
async fn send(
    state: &AppState,
    client: &WebhookClient,
    pending: &PendingDelivery,
) -> AttemptReport {
    let timestamp = state.clock().now().timestamp();
    // The attempt's span, when traces are on, is the receiver's parent; otherwise the
    // span the event was caused under is, as it was recorded.
    let span = state
        .traces()
        .map(|traces| traces.delivery_attempt(pending));
    let trace = match &span {
        Some(span) => span.traceparent(),
        None => pending.event.traceparent.clone(),
    };
    let (report, took) = client.deliver(pending, trace.as_ref(), timestamp).await;
    if let Some(span) = span {
        span.finish_attempt(&report);
    }
    let outcome = report.outcome();
    state.metrics().webhook_attempt(outcome, took.as_secs_f64());
    // A failed attempt is something an operator may have to act on: WARN. A success is
    // DEBUG: at a thousand a second, one line each would be most of the log.
    macro_rules! attempt {
        ($level:ident) => {
            tracing::$level!(
                webhook_id = %pending.webhook_id,
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
        attempt!(debug);
    }
    report
}

//! A delivery run: one sender sending a subscription its events while it holds the lease.
//!
//! The run is the sender's memory between the store's records. It is begun by
//! [`WebhookUseCases::begin_delivery`](crate::WebhookUseCases::begin_delivery), which takes the
//! lease; it is given pages of the feed read ahead ([`DeliveryRun::take_page`]), says which
//! event to send next ([`DeliveryRun::next`]), is told what became of each attempt
//! ([`DeliveryRun::attempted`]), and says when its progress should be recorded
//! ([`DeliveryRun::record_due`]). Recording ([`DeliveryRun::record`], then
//! [`WebhookUseCases::record_run`](crate::WebhookUseCases::record_run)) writes the cursor, the
//! count of deliveries, the batch's latest success and any failure in one transaction, and
//! renews the lease.
//!
//! What a crash costs: the deliveries since the last record are sent again by the next run
//! (at least once). A record is due after [`RECORD_BATCH`] deliveries or [`RECORD_INTERVAL`],
//! whichever comes first, so at most that many events, and the one in flight, are repeated.

use std::collections::VecDeque;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::{
    AttemptReport, DeliveryOutcome, DeliveryState, EventTypes, NewDeliveryAttempt, PendingDelivery,
    RetryPolicy, Webhook, WebhookSecret, WebhookUrl, later,
};
use crate::events::Event;
use crate::ids::{EventId, WebhookId};

/// Deliveries after which a run records its progress, at the latest.
pub const RECORD_BATCH: u64 = 100;

/// Time after which a run records its progress, at the latest, once it has any.
pub const RECORD_INTERVAL: Duration = Duration::from_millis(250);

/// How many events of the feed one read ahead looks through.
pub const READ_AHEAD: u32 = 500;

/// One sender's run through a subscription's events; see the [module](self).
#[derive(Debug)]
pub struct DeliveryRun {
    webhook_id: WebhookId,
    url: WebhookUrl,
    secret: WebhookSecret,
    events: EventTypes,
    holder: String,
    /// The state as the store has it: as this run read it, or last recorded it.
    recorded: DeliveryState,
    /// Events of the subscription's types read ahead and not yet delivered, oldest first.
    ahead: VecDeque<Event>,
    /// The last event read, of any type: the next page starts after it.
    read_through: Option<EventId>,
    /// Every event of the subscription's types up to here has been delivered.
    through: Option<EventId>,
    /// Failed attempts at the first event of `ahead`.
    failed_attempts: u32,
    /// Deliveries since the last record, and the latest of them.
    delivered: u64,
    latest: Option<NewDeliveryAttempt>,
    /// A failed attempt: the run sends nothing more. Recorded once.
    failure: Option<NewDeliveryAttempt>,
    failure_recorded: bool,
    recorded_at: DateTime<Utc>,
    lease_until: DateTime<Utc>,
}

/// What one record of a run writes; made by [`DeliveryRun::record`], written by
/// [`WebhookUseCases::record_run`](crate::WebhookUseCases::record_run).
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    pub(crate) webhook_id: WebhookId,
    pub(crate) holder: String,
    /// The cursor the store must still have: the run's own last record.
    pub(crate) expected: Option<EventId>,
    pub(crate) state: DeliveryState,
    /// Deliveries since the run's last record.
    pub(crate) delivered: u64,
    /// The batch's latest success and its failure, as attempts to keep.
    pub(crate) attempts: Vec<NewDeliveryAttempt>,
    pub(crate) at: DateTime<Utc>,
    pub(crate) lease_until: DateTime<Utc>,
    /// Whether the lease is given up with this record (the run ends).
    pub(crate) release: bool,
}

impl RunRecord {
    /// The state the record writes.
    pub fn state(&self) -> &DeliveryState {
        &self.state
    }

    /// How many deliveries it records.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }
}

impl DeliveryRun {
    pub(crate) fn begin(
        webhook: Webhook,
        secret: WebhookSecret,
        holder: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Self {
        let state = webhook.delivery;
        Self {
            webhook_id: webhook.id,
            url: webhook.url,
            secret,
            events: webhook.events,
            holder: holder.to_owned(),
            recorded: state,
            ahead: VecDeque::new(),
            read_through: state.delivered_through,
            through: state.delivered_through,
            failed_attempts: state.failed_attempts,
            delivered: 0,
            latest: None,
            failure: None,
            failure_recorded: false,
            recorded_at: now,
            lease_until,
        }
    }

    /// The subscription.
    pub fn webhook_id(&self) -> WebhookId {
        self.webhook_id
    }

    /// The sender holding the lease.
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// Where the next page of the feed starts: after this event.
    pub fn read_from(&self) -> Option<EventId> {
        self.read_through
    }

    /// Whether every event read so far has been sent: time to read the next page.
    pub fn needs_events(&self) -> bool {
        self.ahead.is_empty() && self.failure.is_none()
    }

    /// Takes the next page of the feed, read after [`read_from`](Self::read_from): keeps the
    /// events of the subscription's types to send, and steps over the others. Returns whether
    /// the page had any event; an empty one means the run has caught up.
    pub fn take_page(&mut self, page: Vec<Event>) -> bool {
        let Some(last) = page.last().map(|e| e.id) else {
            return false;
        };
        #[cfg(feature = "plant-webhook-out-of-order")]
        let before = self.ahead.len();
        self.ahead.extend(
            page.into_iter()
                .filter(|e| e.id.get() > last_or_zero(self.read_through))
                .filter(|e| self.events.contains(e.event_type)),
        );
        #[cfg(feature = "plant-webhook-out-of-order")]
        if self.ahead.len() >= before + 2 {
            // The soak's planted bug (bench/chaos --plant webhook-out-of-order).
            self.ahead.swap(before, before + 1);
        }
        self.read_through = Some(last);
        if self.ahead.is_empty() {
            self.through = self.read_through;
        }
        true
    }

    /// The event to send next, or `None` once a failure ended the run or everything read has
    /// been sent.
    pub fn next(&self) -> Option<PendingDelivery> {
        if self.failure.is_some() {
            return None;
        }
        self.ahead.front().map(|event| PendingDelivery {
            webhook_id: self.webhook_id,
            url: self.url.clone(),
            secret: self.secret.clone(),
            event: event.clone(),
            attempt: self.failed_attempts.saturating_add(1),
        })
    }

    /// Takes what became of the attempt at [`next`](Self::next)'s event, made at `at`. A 2xx
    /// moves the run past it; anything else ends the run, to be recorded.
    pub fn attempted(&mut self, report: &AttemptReport, at: DateTime<Utc>) -> DeliveryOutcome {
        let outcome = report.outcome();
        let Some(event) = self.ahead.front() else {
            return outcome;
        };
        let attempt = NewDeliveryAttempt {
            webhook_id: self.webhook_id,
            event_id: event.id,
            event_type: event.event_type,
            attempt: self.failed_attempts.saturating_add(1),
            attempted_at: at,
            outcome,
            status_code: report.status_code,
            error: report.error.clone(),
            next_attempt_at: None,
        };
        match outcome {
            DeliveryOutcome::Delivered => {
                self.ahead.pop_front();
                // Up to the next event to send, or all that was read: what lies between is
                // of other types.
                self.through = match self.ahead.front() {
                    Some(next) => EventId::new(next.id.get() - 1).ok(),
                    None => self.read_through,
                };
                self.failed_attempts = 0;
                self.delivered += 1;
                self.latest = Some(attempt);
            }
            DeliveryOutcome::Failed => self.failure = Some(attempt),
        }
        outcome
    }

    /// Whether a failure has stopped the sending.
    pub fn has_failed(&self) -> bool {
        self.failure.is_some()
    }

    /// When the failed event may be tried again, once the failure is recorded.
    pub fn retry_at(&self) -> Option<DateTime<Utc>> {
        self.failure_recorded
            .then_some(self.recorded.next_attempt_at)
            .flatten()
    }

    /// Goes on after a recorded failure, with the failed event: a sender that waited out a
    /// short retry delay itself, holding the lease, rather than giving the run up.
    pub fn retry(&mut self) {
        if !self.failure_recorded {
            return;
        }
        if let Some(failure) = self.failure.take() {
            self.failed_attempts = failure.attempt;
            self.failure_recorded = false;
        }
    }

    /// Whether anything happened since the last record.
    pub fn has_news(&self) -> bool {
        self.delivered > 0
            || self.failure_unrecorded()
            || self.through != self.recorded.delivered_through
    }

    fn failure_unrecorded(&self) -> bool {
        self.failure.is_some() && !self.failure_recorded
    }

    /// Whether the progress should be recorded now: after a failure, after
    /// [`RECORD_BATCH`] deliveries, or [`RECORD_INTERVAL`] after the last record.
    pub fn record_due(&self, now: DateTime<Utc>) -> bool {
        self.failure_unrecorded()
            || self.delivered >= RECORD_BATCH
            || (self.has_news() && now >= later(self.recorded_at, RECORD_INTERVAL))
    }

    /// Whether the lease ends within `margin` of `now`: an attempt that may take that long
    /// must renew it first (by a record), so that no other sender starts meanwhile.
    pub fn lease_ends_within(&self, now: DateTime<Utc>, margin: Duration) -> bool {
        later(now, margin) >= self.lease_until
    }

    /// The record of the run's progress at `now`: the lease renewed for `lease`, or given up
    /// if `release`; a failure's retry delayed by `policy`.
    pub fn record(
        &self,
        now: DateTime<Utc>,
        lease: Duration,
        policy: &RetryPolicy,
        release: bool,
    ) -> RunRecord {
        let mut attempts: Vec<NewDeliveryAttempt> = self.latest.iter().cloned().collect();
        let (failed_attempts, next_attempt_at) = match &self.failure {
            // Recorded already: the retry stays as it was written.
            Some(_) if self.failure_recorded => {
                (self.recorded.failed_attempts, self.recorded.next_attempt_at)
            }
            Some(failure) => {
                let retry_at = later(now, policy.delay_after(failure.attempt));
                attempts.push(NewDeliveryAttempt {
                    next_attempt_at: Some(retry_at),
                    ..failure.clone()
                });
                (failure.attempt, Some(retry_at))
            }
            None => (self.failed_attempts, None),
        };
        let state = DeliveryState {
            delivered_through: self.through,
            failed_attempts,
            next_attempt_at,
            delivered_events: self.recorded.delivered_events + self.delivered,
        };
        RunRecord {
            webhook_id: self.webhook_id,
            holder: self.holder.clone(),
            expected: self.recorded.delivered_through,
            state,
            delivered: self.delivered,
            attempts,
            at: now,
            lease_until: later(now, lease),
            release,
        }
    }

    /// Takes `record` as written: the run goes on from it. The run may have gone on sending
    /// while the record was being written (a sender need not wait for it); what it delivered
    /// since stays to be recorded next.
    pub fn recorded(&mut self, record: &RunRecord) {
        self.recorded = record.state;
        self.delivered = self.delivered.saturating_sub(record.delivered);
        let written = |a: &NewDeliveryAttempt| {
            record
                .attempts
                .iter()
                .any(|r| r.event_id == a.event_id && r.outcome == a.outcome)
        };
        if self.latest.as_ref().is_some_and(written) {
            self.latest = None;
        }
        if self.failure.as_ref().is_some_and(written) {
            self.failure_recorded = true;
        }
        self.recorded_at = record.at;
        self.lease_until = record.lease_until;
    }
}

fn last_or_zero(id: Option<EventId>) -> i64 {
    id.map_or(0, EventId::get)
}

#[cfg(test)]
mod tests;

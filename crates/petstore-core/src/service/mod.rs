//! The use cases: every operation of the API, each one transaction, grouped by aggregate.
//!
//! [`Service`] holds the store, the clock and the operator's settings; `shop.pets()`,
//! `shop.orders()` and their siblings give the use cases of one aggregate, one method per
//! operation. A use case checks what the [`Caller`](crate::Caller) may do, loads the facts it
//! needs, asks [`rules`](crate::PetStock) what follows, and writes the new state together with
//! its events. It never talks to HTTP or SQL.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::access::Caller;
use crate::actor::{Actor, Cause};
use crate::clock::{Clock, SystemClock};
use crate::error::{DomainError, Resource};
use crate::events::DomainEvent;
use crate::hold::HoldLives;
use crate::idempotency::{IdempotencyRecord, Idempotent, Outcome, RECORD_LIFETIME};
use crate::ids::{CategoryId, PetId};
use crate::model::{Category, Pet};
use crate::money::Currency;
use crate::precondition::Precondition;
use crate::repository::{CatalogueReader, Store, Transaction};
use crate::trace::TraceParent;
use crate::validation::ValidationError;

mod catalogue;
mod deliveries;
mod events;
mod holds;
mod inventory;
mod keys;
mod orders;
#[cfg(any(
    feature = "plant-price-outside-tx",
    feature = "plant-sweep-without-reread"
))]
mod plant;
mod prices;
mod sessions;
mod stock;
mod webhooks;

pub use catalogue::{CategoryUseCases, PetUseCases};
pub use deliveries::{MAX_RECEIPTS, Receipt};
pub use events::EventUseCases;
pub use holds::{HoldCheckout, HoldUseCases};
pub use inventory::InventoryUseCases;
pub use keys::{Bootstrap, Bootstrapped, KeyUseCases};
pub use orders::OrderUseCases;
pub use prices::PriceUseCases;
pub use sessions::{Resumed, SessionUseCases};
pub use webhooks::{DeliveryStatus, WebhookUseCases};

use stock::{order_pets, pet_stock};

/// The pet store's use cases over a [`Store`].
///
/// Cheap to share: wrap it in an `Arc`, or give it an `Arc`'d store.
#[derive(Debug, Clone)]
pub struct Service<S, C = SystemClock> {
    store: S,
    clock: C,
    settings: Settings,
    cause: Cause,
    listener: Option<Arc<dyn EventListener>>,
}

/// Told of the events each change appends, when its work has appended them: counters of
/// what the shop does (orders placed) are counted from them, not by each caller. A change
/// may run again before its commit (a store that retries), so a listener keeps the last
/// run's, and counts them once the commit is known.
pub trait EventListener: Send + Sync + std::fmt::Debug {
    /// `events` were appended by the change being run.
    fn appended(&self, events: &[DomainEvent]);
}

/// What the operator decides for the whole service.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settings {
    /// The currency the shop prices in: chosen once, when the shop is set up. A store keeps
    /// it and refuses another (`petstore-store`'s `shop_currency`); give it here as the store
    /// has it. The default is the euro.
    pub currency: Currency,
    /// Whether webhooks may target private, loopback and reserved addresses (a test rig, a
    /// receiver on the same network). Off by default: a subscription could otherwise make the
    /// service reach into the network it runs in.
    pub allow_private_webhook_targets: bool,
    /// How long holds live: the default and the longest a client may ask for.
    pub hold_lives: HoldLives,
}

impl<S: Store> Service<S> {
    /// The use cases over `store`, with the system clock and default settings.
    pub fn new(store: S) -> Self {
        Self::with_clock(store, SystemClock)
    }
}

impl<S: Store, C: Clock> Service<S, C> {
    /// The use cases over `store`, reading time from `clock` (event times, retries).
    pub fn with_clock(store: S, clock: C) -> Self {
        Self {
            store,
            clock,
            settings: Settings::default(),
            // Made by a program, not a request: its changes are the operator's until it says
            // who acts (`acting_as`).
            cause: Cause {
                actor: Some(Actor::Operator),
                trace: None,
                request_id: None,
            },
            listener: None,
        }
    }

    /// The same use cases with the operator's `settings`.
    #[must_use]
    pub fn with_settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    /// The same use cases, recording `cause` (the trace of the request being served) with
    /// the events of every change they make, so the webhook deliveries of those events
    /// continue that trace.
    #[must_use]
    pub fn caused_by(&self, trace: Option<TraceParent>) -> Self
    where
        S: Clone,
        C: Clone,
    {
        let mut shop = self.clone();
        shop.cause.trace = trace;
        shop
    }

    /// The same use cases, recording `actor` as who caused every change they make, with its
    /// events (the feed, the stream and webhook deliveries show it). Use cases never told
    /// record [`Actor::Operator`]: the program that made them.
    #[must_use]
    pub fn acting_as(&self, actor: Actor) -> Self
    where
        S: Clone,
        C: Clone,
    {
        let mut shop = self.clone();
        shop.cause.actor = Some(actor);
        shop
    }

    /// The same use cases, recording `cause` (who, and under which trace) with the events of
    /// every change they make.
    #[must_use]
    pub fn with_cause(mut self, cause: Cause) -> Self {
        self.cause = cause;
        self
    }

    /// The same use cases, telling `listener` of the events each change appends.
    #[must_use]
    pub fn telling(mut self, listener: Arc<dyn EventListener>) -> Self {
        self.listener = Some(listener);
        self
    }

    /// The same use cases (clock, settings, the cause they record) over another store: for a
    /// caller that hands each piece of work a store of its own, such as a burst of jobs
    /// sharing one transaction.
    pub fn over<T: Store>(&self, store: T) -> Service<T, C>
    where
        C: Clone,
    {
        Service {
            store,
            clock: self.clock.clone(),
            settings: self.settings,
            cause: self.cause.clone(),
            listener: self.listener.clone(),
        }
    }

    /// The currency the shop prices in.
    pub fn currency(&self) -> Currency {
        self.settings.currency
    }

    /// The store underneath.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Creating, reading, listing, replacing and deleting categories.
    pub fn categories(&self) -> CategoryUseCases<'_, S, C> {
        CategoryUseCases { shop: self }
    }

    /// Creating, reading, listing, replacing and deleting pets.
    pub fn pets(&self) -> PetUseCases<'_, S, C> {
        PetUseCases { shop: self }
    }

    /// Reading, setting and removing pets' prices.
    pub fn prices(&self) -> PriceUseCases<'_, S, C> {
        PriceUseCases { shop: self }
    }

    /// Reading and setting stock.
    pub fn inventory(&self) -> InventoryUseCases<'_, S, C> {
        InventoryUseCases { shop: self }
    }

    /// Placing, reading, listing, updating and cancelling orders.
    pub fn orders(&self) -> OrderUseCases<'_, S, C> {
        OrderUseCases { shop: self }
    }

    /// Holds: placing, reading, releasing, checking out, and ending those past their expiry.
    pub fn holds(&self) -> HoldUseCases<'_, S, C> {
        HoldUseCases { shop: self }
    }

    /// API keys: creating, authenticating, listing, revoking, bootstrapping.
    pub fn keys(&self) -> KeyUseCases<'_, S, C> {
        KeyUseCases { shop: self }
    }

    /// The staff console's sessions: opening, resuming, ending.
    pub fn sessions(&self) -> SessionUseCases<'_, S, C> {
        SessionUseCases { shop: self }
    }

    /// The event feed.
    pub fn events(&self) -> EventUseCases<'_, S, C> {
        EventUseCases { shop: self }
    }

    /// Webhook subscriptions, and the steps of delivering to them.
    pub fn webhooks(&self) -> WebhookUseCases<'_, S, C> {
        WebhookUseCases { shop: self }
    }

    /// Records a change's `events` in its transaction `tx`, with the cause of these use
    /// cases, and tells the listener, if there is one, what was appended.
    fn record(
        &self,
        tx: &mut dyn Transaction,
        time: DateTime<Utc>,
        events: &[DomainEvent],
    ) -> Result<(), DomainError> {
        tx.append_events(time, &self.cause, events)?;
        if let Some(listener) = &self.listener {
            listener.appended(events);
        }
        Ok(())
    }

    /// Runs a write and records the events it returns in the same transaction.
    fn change<T>(
        &self,
        mut work: impl FnMut(&mut dyn Transaction) -> Result<(T, Vec<DomainEvent>), DomainError>,
    ) -> Result<T, DomainError> {
        let time = self.clock.now();
        self.store.write(|tx| {
            let (value, events) = work(tx)?;
            self.record(tx, time, &events)?;
            Ok(value)
        })
    }

    /// Runs a create, once per idempotency key of `caller` if `once` gives one (see
    /// [`Idempotent`]).
    fn create<T>(
        &self,
        caller: Caller,
        once: Option<Idempotent<'_, T>>,
        mut work: impl FnMut(&mut dyn Transaction) -> Result<(T, Vec<DomainEvent>), DomainError>,
    ) -> Result<Outcome<T>, DomainError> {
        let Some(once) = once else {
            return self.change(work).map(Outcome::Done);
        };
        // Keys are scoped to who sends them; the operator has no scope to keep them in.
        let owner = caller.owner().ok_or_else(|| {
            ValidationError::new(
                "Idempotency-Key",
                "is scoped to an API key; the operator cannot send one",
            )
        })?;
        let time = self.clock.now();
        let key = &once.key;
        // A record past its lifetime is as good as absent; the store removes such records
        // off the request path (its own upkeep), so no request pays for a purge.
        let fresh_since = time - RECORD_LIFETIME;
        self.store.write(|tx| {
            let found = tx.idempotency_record(owner, &key.key)?;
            if let Some(record) = found.filter(|record| record.recorded_at >= fresh_since) {
                return if record.fingerprint == key.fingerprint {
                    Ok(Outcome::Replayed(record.response))
                } else {
                    Err(DomainError::IdempotencyKeyReused)
                };
            }
            let (value, events) = work(tx)?;
            self.record(tx, time, &events)?;
            let record = IdempotencyRecord {
                fingerprint: key.fingerprint,
                response: (once.record)(&value),
                recorded_at: time,
            };
            tx.insert_idempotency_record(owner, &key.key, &record)?;
            Ok(Outcome::Done(value))
        })
    }
}

/// Refuses the change when the client's condition on the current state does not hold.
fn require<T>(
    condition: &impl Precondition<T>,
    current: &T,
    resource: Resource,
) -> Result<(), DomainError> {
    if condition.holds(current) {
        Ok(())
    } else {
        Err(DomainError::PreconditionFailed(resource))
    }
}

fn existing_category(
    catalogue: &mut dyn CatalogueReader,
    id: CategoryId,
) -> Result<Category, DomainError> {
    catalogue
        .category(id)?
        .ok_or_else(|| DomainError::not_found(Resource::Category, id))
}

/// A category named in a body: its absence is the body's fault (422), not a missing resource.
fn known_category(catalogue: &mut dyn CatalogueReader, id: CategoryId) -> Result<(), DomainError> {
    match catalogue.category(id)? {
        Some(_) => Ok(()),
        None => Err(DomainError::UnknownCategory { id }),
    }
}

fn existing_pet(catalogue: &mut dyn CatalogueReader, id: PetId) -> Result<Pet, DomainError> {
    catalogue
        .pet(id)?
        .ok_or_else(|| DomainError::not_found(Resource::Pet, id))
}

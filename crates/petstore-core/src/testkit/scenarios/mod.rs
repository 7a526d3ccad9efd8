//! One scenario per rule of the contract, grouped by aggregate. Each takes a fresh, empty
//! store; [`SCENARIOS`](super::SCENARIOS) names them all.
//!
//! The scenarios act as the [operator](Caller::Operator) unless they are about who may do
//! what: the rules of the store hold whoever asks.

mod access;
mod catalogue;
mod checkout;
mod deliveries;
mod events;
mod holds;
mod idempotency;
mod inventory;
mod keys;
mod ledger;
mod lists;
mod orders;
mod prices;
mod sessions;
mod webhooks;

use std::sync::Arc;

use chrono::{DateTime, Utc};

pub use access::*;
pub use catalogue::*;
pub use checkout::*;
pub use deliveries::*;
pub use events::*;
pub use holds::*;
pub use idempotency::*;
pub use inventory::*;
pub use keys::*;
pub use ledger::*;
pub use lists::*;
pub use orders::*;
pub use prices::*;
pub use sessions::*;
pub use webhooks::*;

use super::{Made, Must};
use crate::{
    Always, AttemptReport, Caller, CategoryId, Clock, DeliveryRun, DeliveryStatus, DomainError,
    EventType, EventTypes, KeyId, KeySecret, ManualClock, Name, NewApiKey, NewCategory, NewOrder,
    NewPet, NewWebhook, Order, OrderId, OrderPatch, PageSize, Pet, PetId, PetStatus, Quantity,
    RetryPolicy, Role, RunRecord, Service, Stock, Store, Webhook, WebhookId, WebhookSecret,
    WebhookUrl,
};

/// The lease the scenarios' senders take.
const LEASE: std::time::Duration = std::time::Duration::from_secs(30);

/// The instant the kit's clock shows.
pub fn start_time() -> DateTime<Utc> {
    DateTime::from_timestamp(1_795_000_000, 0).unwrap_or_default()
}

/// The program itself, which may do everything: who acts in the scenarios unless they are
/// about callers.
pub const OPERATOR: Caller = Caller::Operator;

/// A customer holding key `key` (the key need not be stored: use cases trust their caller).
pub fn customer(key: i64) -> Caller {
    Caller::key_holder(KeyId::new(key).must("a key id"), Role::Customer)
}

/// A staff member holding key `key`.
pub fn staff(key: i64) -> Caller {
    Caller::key_holder(KeyId::new(key).must("a key id"), Role::Staff)
}

/// An admin holding key `key`.
pub fn admin(key: i64) -> Caller {
    Caller::key_holder(KeyId::new(key).must("a key id"), Role::Admin)
}

/// A service over the store under test with a fixed clock and one category, "Dogs".
#[derive(Debug)]
pub struct Fixture<S> {
    /// The use cases over the store under test.
    pub shop: Service<S, Arc<ManualClock>>,
    /// The clock the service reads.
    pub clock: Arc<ManualClock>,
    /// A category that exists.
    pub dogs: CategoryId,
}

impl<S: Store> Fixture<S> {
    /// Sets up the fixture on `store`.
    pub fn new(store: S) -> Self {
        let clock = Arc::new(ManualClock::new(start_time()));
        let shop = Service::with_clock(store, Arc::clone(&clock));
        let dogs = shop
            .categories()
            .create(OPERATOR, NewCategory::new(name("Dogs")), None)
            .made("create the Dogs category")
            .id;
        Self { shop, clock, dogs }
    }

    /// A new `available` pet in Dogs, with `stock` units.
    pub fn pet_with_stock(&self, pet_name: &str, stock: u32) -> Pet {
        let pet = self
            .shop
            .pets()
            .create(OPERATOR, NewPet::new(name(pet_name), self.dogs), None)
            .made("create a pet");
        if stock > 0 {
            self.shop
                .inventory()
                .set_stock(OPERATOR, pet.id, Stock::from_level(stock), Always)
                .must("stock the pet");
        }
        pet
    }

    /// Places an order of `quantity` units as the operator (so owned by nobody).
    pub fn order(&self, pet: PetId, quantity: i64) -> Result<Order, DomainError> {
        self.order_as(OPERATOR, pet, quantity)
    }

    /// Places an order of `quantity` units as `caller`.
    pub fn order_as(
        &self,
        caller: Caller,
        pet: PetId,
        quantity: i64,
    ) -> Result<Order, DomainError> {
        self.shop
            .orders()
            .place(caller, NewOrder::new(pet, qty(quantity)), None)
            .map(|outcome| {
                outcome
                    .done()
                    .must("an order placed without a key runs now")
            })
    }

    /// Completes an order.
    pub fn complete(&self, order: OrderId) -> Order {
        let patch = OrderPatch {
            complete: Some(true),
            ..OrderPatch::default()
        };
        self.shop
            .orders()
            .update(OPERATOR, order, patch, Always)
            .must("complete the order")
    }

    /// The pet's status and stock.
    pub fn state_of(&self, pet: PetId) -> (PetStatus, u32) {
        let item = self.shop.inventory().get(pet).must("read the inventory");
        let status = self.shop.pets().get(pet).must("read the pet").status;
        assert_eq!(
            item.status, status,
            "an inventory entry shows its pet's status"
        );
        (status, item.quantity.get())
    }

    /// The types of the events recorded after event number `after` (0 for all).
    pub fn event_types_after(&self, after: usize) -> Vec<EventType> {
        let mut types = Vec::new();
        let mut cursor = None;
        loop {
            let batch = self
                .shop
                .events()
                .after(OPERATOR, cursor, PageSize::new(100).must("page size"))
                .must("read events");
            let Some(last) = batch.last() else { break };
            cursor = Some(last.id);
            types.extend(batch.iter().map(|e| e.event_type));
        }
        types.split_off(after.min(types.len()))
    }

    /// How many events are recorded.
    pub fn event_count(&self) -> usize {
        self.event_types_after(0).len()
    }

    /// A subscription of `https://hooks.example.com/petstore` to `types`.
    pub fn webhook_to(&self, types: &[EventType]) -> Webhook {
        let new = NewWebhook {
            url: WebhookUrl::parse("https://hooks.example.com/petstore").must("a valid URL"),
            events: EventTypes::new(types.to_vec()).must("valid event types"),
        };
        self.shop
            .webhooks()
            .create(OPERATOR, new, &WebhookSecret::from_random([9; 32]))
            .must("create a webhook")
    }

    /// A run of subscription `hook` begun by `sender`, as the dispatcher begins one, with
    /// its first page read ahead; `None` if it may not begin.
    pub fn begin_run(&self, hook: WebhookId, sender: &str) -> Option<DeliveryRun> {
        let webhooks = self.shop.webhooks();
        let mut run = webhooks
            .begin_delivery(hook, sender, LEASE)
            .must("begin a run")?;
        self.read_ahead(&mut run);
        Some(run)
    }

    /// Gives `run` the next page of the feed; returns whether it had any event.
    pub fn read_ahead(&self, run: &mut DeliveryRun) -> bool {
        let page = self
            .shop
            .webhooks()
            .read_ahead(run.read_from())
            .must("read ahead");
        run.take_page(page)
    }

    /// Tells `run` that its next event was answered `status` now.
    pub fn answer(&self, run: &mut DeliveryRun, status: u16) {
        let report = AttemptReport {
            status_code: Some(status),
            error: None,
        };
        run.attempted(&report, self.clock.now());
    }

    /// Records `run`'s progress now, ending it if `release`; returns the record and whether
    /// it was written.
    pub fn record(&self, run: &mut DeliveryRun, release: bool) -> (RunRecord, bool) {
        let record = run.record(self.clock.now(), LEASE, &RetryPolicy::default(), release);
        let written = self
            .shop
            .webhooks()
            .record_run(&record)
            .must("record a run");
        if written {
            run.recorded(&record);
        }
        (record, written)
    }

    /// Where subscription `hook`'s deliveries stand.
    pub fn delivery_status(&self, hook: WebhookId) -> DeliveryStatus {
        self.shop
            .webhooks()
            .delivery_status()
            .must("delivery status")
            .into_iter()
            .find(|status| status.id == hook)
            .must("the subscription's status")
    }
}

/// A valid name, for test code.
pub fn name(text: &str) -> Name {
    Name::parse(text).must("a valid name")
}

/// A valid quantity, for test code.
pub fn qty(units: i64) -> Quantity {
    Quantity::new(units).must("a valid quantity")
}

/// The code of a refusal; panics if the operation succeeded.
fn code<T: std::fmt::Debug>(result: Result<T, DomainError>) -> &'static str {
    match result {
        Ok(value) => panic!("expected a refusal, got {value:?}"),
        Err(error) => error.code(),
    }
}

/// A key secret made from `seed`.
fn secret(seed: u8) -> KeySecret {
    KeySecret::from_random([seed; 32])
}

/// A key to create.
fn new_key(name_text: &str, role: Role) -> NewApiKey {
    NewApiKey {
        name: name(name_text),
        role,
    }
}

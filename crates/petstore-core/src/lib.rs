//! The pet store's domain: what a pet, a category, an order and a stock level are, which
//! changes the rules allow, and what each change records.
//!
//! This crate does no I/O and depends on no web framework, database or async runtime, so it
//! can be embedded in any Rust service and its rules tested in milliseconds.
//!
//! Every public item is at the crate root; the modules are private, so each item has one path.
//!
//! - the resources ([`Pet`], [`Order`], …), in the API's exact JSON shapes, built only from
//!   validated values ([`Name`], [`Quantity`], [`PetId`], …: "parse, don't validate");
//! - [`PetStock`]: the pet status state machine and the order and stock rules, as pure
//!   functions, each naming the movement of the stock ledger it makes ([`StockChange`]);
//! - the stock ledger: every change of a pet's stock is a [`Movement`] of a [`MovementKind`],
//!   written with the change, so stock is always its ledger's sum;
//! - [`Hold`]: units set aside for a basket, ended exactly once (released, expired or
//!   checked out);
//! - [`Caller`], [`Role`], [`Permission`]: who may do what, in one table;
//! - [`Webhook`] and friends: subscriptions, Standard Webhooks signing, delivery order and
//!   retries;
//! - the repository traits a store implements, one reader and one writer per aggregate
//!   ([`CatalogueReader`], [`OrderWriter`], …), and its unit of work ([`Store`]);
//! - [`Service`]: the use cases, one method per operation, one transaction each, over any
//!   [`Store`];
//! - [`InMemoryStore`]: a store in memory, for tests and small embedded catalogues;
//! - `testkit` (feature `testkit`): the conformance suite every store must pass;
//! - `openapi` (feature `openapi`): OpenAPI schemas (utoipa) with every bound of the values.
//!
//! # Example
//!
//! ```
//! use petstore_core::{
//!     Always, Caller, InMemoryStore, Name, NewCategory, NewOrder, NewPet, Outcome, PetStatus,
//!     Quantity, Service, Stock,
//! };
//!
//! # fn main() -> Result<(), petstore_core::DomainError> {
//! let shop = Service::new(InMemoryStore::new());
//! // The program itself acts as the operator: it may do everything.
//! let me = Caller::Operator;
//! let new_dogs = NewCategory::new(Name::parse("Dogs")?);
//! let Outcome::Done(dogs) = shop.categories().create(me, new_dogs, None)? else { unreachable!() };
//! let new_rex = NewPet::new(Name::parse("Rex")?, dogs.id);
//! let Outcome::Done(rex) = shop.pets().create(me, new_rex, None)? else { unreachable!() };
//! shop.inventory().set_stock(me, rex.id, Stock::settable(1)?, Always)?;
//!
//! let placed = shop.orders().place(me, NewOrder::new(rex.id, Quantity::ONE), None)?;
//! let Outcome::Done(order) = placed else { unreachable!() };
//! assert!(!order.complete);
//! // The last unit is in an open order: Rex is pending, and sold out for everyone else.
//! assert_eq!(shop.pets().get(rex.id)?.status, PetStatus::Pending);
//! let refused = shop.orders().place(me, NewOrder::new(rex.id, Quantity::ONE), None);
//! assert_eq!(refused.unwrap_err().code(), "insufficient_stock");
//!
//! // Cancelling puts the unit back and Rex is available again.
//! shop.orders().cancel(me, order.id, Always)?;
//! assert_eq!(shop.inventory().get(rex.id)?.status, PetStatus::Available);
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

mod access;
mod actor;
mod checkout;
mod clock;
mod error;
mod events;
mod hold;
mod idempotency;
mod ids;
mod json_int;
mod ledger;
mod memory;
mod model;
mod money;
#[cfg(feature = "openapi")]
pub mod openapi;
mod permission;
mod precondition;
mod query;
mod repository;
mod rules;
mod service;
mod session;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
mod trace;
mod validation;
mod values;
mod webhooks;

pub use access::{ApiKey, Caller, KeySecret, NewApiKey, Role, StoredKey, hashes_match};
pub use actor::{Actor, Cause, Door, KeyHolder, RequestId};
pub use checkout::{CheckoutLines, NewCheckout, NewLine, PlacedCheckout, PricedLine};
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{DomainError, Failure, LineRefusal, Resource};
pub use events::{DomainEvent, Event, EventType};
pub use hold::{Ending, HeldTotals, Hold, HoldEnd, HoldLine, HoldLives, NewHold, PlacedHold};
pub use idempotency::{IdempotencyKey, IdempotencyRecord, Idempotent, Outcome, RECORD_LIFETIME};
pub use ids::{
    CategoryId, DeliveryId, EventId, HoldId, KeyId, MAX_ID, MovementId, OrderId, OwnerId, PetId,
    WebhookId,
};
pub use ledger::{
    Adjustment, AdjustmentUnits, Balances, Entry, Movement, MovementKind, MovementQuery,
    NewMovement, Reason, StockChange,
};
pub use memory::InMemoryStore;
pub use model::{
    Category, InventoryItem, InventoryUpdate, NewCategory, NewOrder, NewPet, Order, OrderLine,
    OrderPatch, Pet, PetStatus,
};
pub use money::{Amount, Currency, PetPrice, Price, Total};
pub use permission::Permission;
pub use precondition::{Always, Precondition};
pub use query::{
    CategoryQuery, InventoryQuery, KeyQuery, OrderQuery, OrderScope, Page, PetQuery, PetSort,
    fold_case,
};
pub use repository::{
    CatalogueReader, CatalogueWriter, EventReader, EventWriter, HoldReader, HoldWriter,
    IdempotencyReader, IdempotencyWriter, InventoryReader, InventoryWriter, KeyReader, KeyWriter,
    LedgerReader, LedgerWriter, OrderReader, OrderWriter, RepoResult, SessionReader, SessionWriter,
    Snapshot, Store, Transaction, WebhookReader, WebhookWriter,
};
pub use rules::{PetStock, Transition};
pub use service::{
    Bootstrap, Bootstrapped, CategoryUseCases, DeliveryStatus, EventListener, EventUseCases,
    HoldCheckout, HoldUseCases, InventoryUseCases, KeyUseCases, MAX_RECEIPTS, OrderUseCases,
    PetUseCases, PriceUseCases, Receipt, Resumed, Service, SessionUseCases, Settings,
    WebhookUseCases,
};
pub use session::{SessionLifetime, SessionToken, StaffSession};
pub use trace::TraceParent;
pub use validation::ValidationError;
pub use values::{Description, Name, PageSize, Quantity, Stock};
pub use webhooks::{
    AttemptReport, DeliveryAttempt, DeliveryOutcome, DeliveryQuery, DeliveryRun, DeliveryState,
    EventTypes, KEPT_ATTEMPTS, NewDeliveryAttempt, NewWebhook, PendingDelivery, READ_AHEAD,
    RECORD_BATCH, RECORD_INTERVAL, RetryPolicy, RunRecord, WEBHOOK_URL_PATTERN, Webhook,
    WebhookQuery, WebhookResend, WebhookSecret, WebhookUrl, is_public_address, lease_is_free,
};

//! The pet store's domain: what a pet, a category, an order and a stock level are, which
//! changes the rules allow, and what each change records.
//!
//! This crate does no I/O and depends on no web framework, database or async runtime, so it
//! can be embedded in any Rust service and its rules tested in milliseconds.
//!
//! - [`model`]: the resources, in the API's exact JSON shapes, built only from validated
//!   [`values`] and [`ids`] ("parse, don't validate");
//! - [`rules`]: the pet status state machine and the order and stock rules, as pure functions;
//! - [`access`]: API keys, roles and the one table of what each role may do;
//! - [`webhooks`]: subscriptions, Standard Webhooks signing, delivery order and retries;
//! - [`repository`]: the traits a store implements, and its unit of work;
//! - [`Service`]: the use cases, one transaction each, over any [`Store`];
//! - [`InMemoryStore`]: a store in memory, for tests and small embedded catalogues;
//! - `testkit` (feature `testkit`): the conformance suite every store must pass;
//! - `openapi` (feature `openapi`): OpenAPI schemas (utoipa) with every bound of the values.
//!
//! # Example
//!
//! ```
//! use petstore_core::{
//!     InMemoryStore, Name, NewCategory, NewOrder, NewPet, OrderScope, PetStatus, Quantity, Service,
//!     Stock,
//! };
//!
//! # fn main() -> Result<(), petstore_core::DomainError> {
//! let shop = Service::new(InMemoryStore::new());
//! let dogs = shop.create_category(NewCategory::new(Name::parse("Dogs")?))?;
//! let rex = shop.create_pet(NewPet::new(Name::parse("Rex")?, dogs.id))?;
//! shop.set_stock(rex.id, Stock::settable(1)?)?;
//!
//! let order = shop.place_order(NewOrder::new(rex.id, Quantity::ONE), None)?;
//! assert!(!order.complete);
//! // The last unit is in an open order: Rex is pending, and sold out for everyone else.
//! assert_eq!(shop.get_pet(rex.id)?.status, PetStatus::Pending);
//! let refused = shop.place_order(NewOrder::new(rex.id, Quantity::ONE), None);
//! assert_eq!(refused.unwrap_err().code(), "insufficient_stock");
//!
//! // Cancelling puts the unit back and Rex is available again.
//! shop.cancel_order(order.id, OrderScope::All)?;
//! assert_eq!(shop.get_inventory_item(rex.id)?.status, PetStatus::Available);
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

pub mod access;
pub mod clock;
pub mod error;
pub mod events;
pub mod idempotency;
pub mod ids;
mod json_int;
pub mod memory;
pub mod model;
#[cfg(feature = "openapi")]
pub mod openapi;
pub mod precondition;
pub mod query;
pub mod repository;
pub mod rules;
pub mod service;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod values;
pub mod webhooks;

pub use access::{ApiKey, Caller, KeySecret, NewApiKey, Permission, Role, StoredKey};
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{DomainError, Resource, ValidationError};
pub use events::{DomainEvent, Event, EventType};
pub use idempotency::{IdempotencyKey, IdempotencyRecord, RECORD_LIFETIME, RecordedResponse};
pub use ids::{CategoryId, DeliveryId, EventId, KeyId, MAX_ID, OrderId, OwnerId, PetId, WebhookId};
pub use memory::InMemoryStore;
pub use model::{
    Category, InventoryItem, InventoryUpdate, NewCategory, NewOrder, NewPet, Order, OrderPatch,
    Pet, PetStatus,
};
pub use precondition::{Always, Precondition};
pub use query::{CategoryQuery, InventoryQuery, KeyQuery, OrderQuery, OrderScope, Page, PetQuery};
pub use repository::{RepoResult, Snapshot, Store, Transaction};
pub use rules::{PetStock, Transition};
pub use service::Service;
pub use values::{Description, Name, PageSize, Quantity, Stock};
pub use webhooks::{
    AttemptReport, DeliveryAttempt, DeliveryOutcome, DeliveryQuery, DeliveryState, EventTypes,
    NewWebhook, PendingDelivery, RetryPolicy, Webhook, WebhookQuery, WebhookSecret, WebhookUrl,
};

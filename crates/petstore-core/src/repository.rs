//! The repository traits a store implements, one read trait and one write trait per aggregate,
//! and the unit of work around them.
//!
//! A [`Store`] runs a piece of work inside one transaction: [`Store::read`] on a consistent
//! [`Snapshot`], [`Store::write`] on a [`Transaction`] that is committed only when the work
//! returns `Ok`. A snapshot is every `*Reader` at once and a transaction every `*Writer`, so a
//! store implements the small traits below, each in a file of its own, and gets the unit of
//! work for free. The use cases in [`Service`](crate::Service) are written against these traits
//! alone, so every store gives the same behaviour; the conformance kit (feature `testkit`)
//! checks that it does.
//!
//! List methods return items ordered by id ascending, starting after `query.after`, and up to
//! `query.limit + 1` of them (see [`Page::from_probe`](crate::Page::from_probe)).
//!
//! The traits are synchronous: a store is called from a blocking context (the HTTP layer
//! runs it off its async workers).

use chrono::{DateTime, Utc};

use crate::access::{ApiKey, NewApiKey, Role, StoredKey};
use crate::actor::Cause;
use crate::checkout::PlacedCheckout;
use crate::error::DomainError;
use crate::events::{DomainEvent, Event};
use crate::idempotency::IdempotencyRecord;
use crate::ids::{CategoryId, EventId, KeyId, OrderId, OwnerId, PetId};
use crate::model::{Category, InventoryItem, NewCategory, NewOrder, NewPet, Order, Pet};
use crate::money::Price;
use crate::query::{CategoryQuery, InventoryQuery, KeyQuery, OrderQuery, Page, PetQuery};
use crate::session::StaffSession;
use crate::values::{Name, PageSize, Stock};

mod holds;
mod ledger;
mod webhooks;

pub use holds::{HoldReader, HoldWriter};
pub use ledger::{LedgerReader, LedgerWriter};
pub use webhooks::{WebhookReader, WebhookWriter};

/// Shorthand for the results of repository methods.
pub type RepoResult<T> = Result<T, DomainError>;

// ---- the catalogue: categories and pets ----------------------------------------------

/// Reads categories and pets.
pub trait CatalogueReader {
    /// The category with this id.
    fn category(&mut self, id: CategoryId) -> RepoResult<Option<Category>>;
    /// The category whose name equals `name` case-insensitively
    /// ([`fold_case`](crate::fold_case)).
    fn category_named(&mut self, name: &Name) -> RepoResult<Option<Category>>;
    /// Categories, by id.
    fn categories(&mut self, query: &CategoryQuery) -> RepoResult<Vec<Category>>;
    /// Whether any pet belongs to the category.
    fn category_has_pets(&mut self, id: CategoryId) -> RepoResult<bool>;
    /// The pet with this id.
    fn pet(&mut self, id: PetId) -> RepoResult<Option<Pet>>;
    /// Pets matching the query, by id in its direction.
    fn pets(&mut self, query: &PetQuery) -> RepoResult<Vec<Pet>>;
    /// How many pets match the query's filters after its `after`, in its direction; its
    /// `limit` aside. The default pages through [`Self::pets`]; a store that can count in one
    /// statement does.
    fn pet_count(&mut self, query: &PetQuery) -> RepoResult<u64> {
        let mut page = PetQuery {
            limit: PageSize::MAX_PAGE,
            ..query.clone()
        };
        let mut count = 0;
        loop {
            let found = Page::from_probe(self.pets(&page)?, page.limit, |p| p.id.get());
            count += found.items.len() as u64;
            match found.next_after {
                Some(next) => page.after = Some(PetId::new(next)?),
                None => return Ok(count),
            }
        }
    }
}

/// Changes categories and pets.
pub trait CatalogueWriter: CatalogueReader {
    /// Stores a new category and gives it an id.
    fn insert_category(&mut self, new: &NewCategory) -> RepoResult<Category>;
    /// Replaces a stored category.
    fn update_category(&mut self, category: &Category) -> RepoResult<()>;
    /// Removes a category that no pet belongs to.
    fn delete_category(&mut self, id: CategoryId) -> RepoResult<()>;
    /// Stores a new pet, gives it an id and an inventory entry with no stock.
    fn insert_pet(&mut self, new: &NewPet) -> RepoResult<Pet>;
    /// Replaces a stored pet's name, category and status; never its price.
    fn update_pet(&mut self, pet: &Pet) -> RepoResult<()>;
    /// Sets a stored pet's price, or removes it (`None`).
    fn set_pet_price(&mut self, id: PetId, price: Option<Price>) -> RepoResult<()>;
    /// Removes a pet and its inventory entry.
    fn delete_pet(&mut self, id: PetId) -> RepoResult<()>;
}

// ---- inventory ------------------------------------------------------------------------

/// Reads stock levels.
pub trait InventoryReader {
    /// The inventory entry of a pet.
    fn inventory_item(&mut self, pet_id: PetId) -> RepoResult<Option<InventoryItem>>;
    /// Inventory entries matching the query, by pet id in its direction.
    fn inventory(&mut self, query: &InventoryQuery) -> RepoResult<Vec<InventoryItem>>;
}

/// Changes stock levels.
pub trait InventoryWriter: InventoryReader {
    /// Sets a pet's stock level.
    fn set_stock(&mut self, pet_id: PetId, stock: Stock) -> RepoResult<()>;
}

// ---- orders ---------------------------------------------------------------------------

/// Reads orders.
pub trait OrderReader {
    /// The order with this id.
    fn order(&mut self, id: OrderId) -> RepoResult<Option<Order>>;
    /// Orders matching the query (including its `owner` filter), by id in its direction.
    fn orders(&mut self, query: &OrderQuery) -> RepoResult<Vec<Order>>;
    /// How many orders match the query's filters (its `owner` too) after its `after`, in its
    /// direction; its `limit` aside. The default pages through [`Self::orders`]; a store
    /// that can count in one statement does.
    fn order_count(&mut self, query: &OrderQuery) -> RepoResult<u64> {
        let mut page = OrderQuery {
            limit: PageSize::MAX_PAGE,
            ..*query
        };
        let mut count = 0;
        loop {
            let found = Page::from_probe(self.orders(&page)?, page.limit, |o| o.id.get());
            count += found.items.len() as u64;
            match found.next_after {
                Some(next) => page.after = Some(OrderId::new(next)?),
                None => return Ok(count),
            }
        }
    }
    /// How many of the pet's orders are open (neither complete nor cancelled).
    fn open_order_count(&mut self, pet_id: PetId) -> RepoResult<u64>;
    /// How many units the pet's open orders hold.
    fn committed_units(&mut self, pet_id: PetId) -> RepoResult<Stock>;
}

/// Changes orders.
pub trait OrderWriter: OrderReader {
    /// Stores a new open order placed by `owner` while its pet's price was `price`, and gives
    /// it an id.
    fn insert_order(
        &mut self,
        new: &NewOrder,
        owner: Option<OwnerId>,
        price: Option<Price>,
    ) -> RepoResult<Order>;
    /// Stores a new open order of several lines (a checkout) and gives it an id. A store
    /// keeps every line, each with its price, and answers the order as
    /// [`PlacedCheckout::into_order`](crate::PlacedCheckout::into_order) makes it.
    fn insert_checkout(&mut self, checkout: &PlacedCheckout) -> RepoResult<Order>;
    /// Replaces a stored order's ship date and completion.
    fn update_order(&mut self, order: &Order) -> RepoResult<()>;
    /// Removes an order.
    fn delete_order(&mut self, id: OrderId) -> RepoResult<()>;
}

// ---- API keys -------------------------------------------------------------------------

/// Reads API keys.
pub trait KeyReader {
    /// The key with this id, revoked or not.
    fn key(&mut self, id: KeyId) -> RepoResult<Option<ApiKey>>;
    /// Keys, revoked ones included, by id.
    fn keys(&mut self, query: &KeyQuery) -> RepoResult<Vec<ApiKey>>;
    /// Every key, revoked or not, whose secret starts with `prefix`, with its hash.
    fn keys_with_prefix(&mut self, prefix: &str) -> RepoResult<Vec<StoredKey>>;
    /// Whether any key that is not revoked exists (with this role, if given).
    fn has_active_key(&mut self, role: Option<Role>) -> RepoResult<bool>;
    /// How many keys are revoked. Keys are never deleted and a revocation is final, so this
    /// only grows: a node that sees it change knows a key was revoked somewhere.
    fn revoked_key_count(&mut self) -> RepoResult<u64>;
}

/// Changes API keys.
pub trait KeyWriter: KeyReader {
    /// Stores a new key: its secret's prefix and hash, never the secret.
    fn insert_key(
        &mut self,
        new: &NewApiKey,
        prefix: &str,
        hash: &[u8; 32],
        created_at: DateTime<Utc>,
    ) -> RepoResult<ApiKey>;
    /// Marks a key revoked at `at`.
    fn revoke_key(&mut self, id: KeyId, at: DateTime<Utc>) -> RepoResult<()>;
}

// ---- staff sessions -------------------------------------------------------------------

/// Reads staff sessions.
pub trait SessionReader {
    /// The session whose token hashes to `hash`, ended or not (the caller judges by its
    /// times).
    fn staff_session(&mut self, hash: &[u8; 32]) -> RepoResult<Option<StaffSession>>;
}

/// Opens, records the use of, and ends staff sessions.
pub trait SessionWriter: SessionReader {
    /// Stores a new session under the hash of its token.
    fn insert_staff_session(&mut self, hash: &[u8; 32], session: &StaffSession) -> RepoResult<()>;
    /// Sets a session's last use; a session that is not stored stays so.
    fn touch_staff_session(&mut self, hash: &[u8; 32], at: DateTime<Utc>) -> RepoResult<()>;
    /// Forgets one session, if stored.
    fn delete_staff_session(&mut self, hash: &[u8; 32]) -> RepoResult<()>;
    /// Forgets every session of a key.
    fn delete_key_staff_sessions(&mut self, key: KeyId) -> RepoResult<()>;
    /// Forgets the sessions last used at or before `seen_by` or opened at or before
    /// `started_by`: those that have ended by then.
    fn delete_ended_staff_sessions(
        &mut self,
        seen_by: DateTime<Utc>,
        started_by: DateTime<Utc>,
    ) -> RepoResult<()>;
}

// ---- events: the outbox and the feed ------------------------------------------------

/// Reads the recorded events.
pub trait EventReader {
    /// Up to `limit` recorded events with ids above `after`, oldest first.
    fn events_after(&mut self, after: Option<EventId>, limit: u32) -> RepoResult<Vec<Event>>;
    /// The id of the latest recorded event, if any.
    fn last_event_id(&mut self) -> RepoResult<Option<EventId>>;
}

/// Records events (the outbox).
pub trait EventWriter: EventReader {
    /// Records events, in order, with ids above every id recorded before, each with what is
    /// known of its `cause`: who caused it, and the trace of the request that did.
    fn append_events(
        &mut self,
        time: DateTime<Utc>,
        cause: &Cause,
        events: &[DomainEvent],
    ) -> RepoResult<()>;
}

// ---- idempotency records --------------------------------------------------------------

/// Reads what idempotency keys were answered.
pub trait IdempotencyReader {
    /// What was recorded for the idempotency key `key` of `owner`, expired or not (the
    /// caller judges by its `recorded_at`). Two creates with the same key may both find
    /// nothing; only one of them can record it ([`IdempotencyWriter::insert_idempotency_record`]).
    fn idempotency_record(
        &mut self,
        owner: OwnerId,
        key: &str,
    ) -> RepoResult<Option<IdempotencyRecord>>;
}

/// Records and forgets what idempotency keys were answered.
pub trait IdempotencyWriter: IdempotencyReader {
    /// Records the response to the idempotency key `key` of `owner`, in place of a record of
    /// that key that had expired ([`RECORD_LIFETIME`](crate::RECORD_LIFETIME) older than
    /// `record`). A store that finds a record of the key still fresh (another transaction
    /// recorded it since this one looked) fails, so that the write does not happen: run
    /// again, the create finds that record and replays it.
    fn insert_idempotency_record(
        &mut self,
        owner: OwnerId,
        key: &str,
        record: &IdempotencyRecord,
    ) -> RepoResult<()>;
    /// Forgets the records made before `before`. A create never needs it (an expired record
    /// counts as absent): it is the store's upkeep, off the request path.
    fn purge_idempotency_records(&mut self, before: DateTime<Utc>) -> RepoResult<()>;
}

// ---- the unit of work -------------------------------------------------------------------

/// Reads of every aggregate, all seeing the same state. Implemented for every type that
/// implements the readers.
pub trait Snapshot:
    CatalogueReader
    + InventoryReader
    + LedgerReader
    + HoldReader
    + OrderReader
    + KeyReader
    + SessionReader
    + EventReader
    + IdempotencyReader
    + WebhookReader
{
}

impl<T> Snapshot for T where
    T: CatalogueReader
        + InventoryReader
        + LedgerReader
        + HoldReader
        + OrderReader
        + KeyReader
        + SessionReader
        + EventReader
        + IdempotencyReader
        + WebhookReader
        + ?Sized
{
}

/// Reads and writes of every aggregate inside one atomic transaction. Implemented for every
/// type that implements the writers.
///
/// Writers are serialised: while one write runs, no other write commits, so a rule checked
/// inside `write` still holds when the transaction commits.
pub trait Transaction:
    Snapshot
    + CatalogueWriter
    + InventoryWriter
    + LedgerWriter
    + HoldWriter
    + OrderWriter
    + KeyWriter
    + SessionWriter
    + EventWriter
    + IdempotencyWriter
    + WebhookWriter
{
}

impl<T> Transaction for T where
    T: CatalogueWriter
        + InventoryWriter
        + LedgerWriter
        + HoldWriter
        + OrderWriter
        + KeyWriter
        + SessionWriter
        + EventWriter
        + IdempotencyWriter
        + WebhookWriter
        + ?Sized
{
}

/// A store: runs work in transactions.
pub trait Store {
    /// Runs `work` on a consistent snapshot.
    fn read<T>(&self, work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>) -> RepoResult<T>;

    /// Runs `work` in a write transaction, committed if it returns `Ok` and rolled back,
    /// leaving no trace, if it returns `Err` (or panics).
    ///
    /// `work` may run more than once: a store whose transactions can conflict (PostgreSQL's,
    /// on a serialization failure or a deadlock) rolls back and runs it again on a fresh
    /// transaction, so that a conflict never reaches the caller. It must do nothing outside
    /// the transaction it is given.
    fn write<T>(&self, work: impl FnMut(&mut dyn Transaction) -> RepoResult<T>) -> RepoResult<T>;

    /// Runs `work`, which reads with a single call of one reader (one statement), on a
    /// consistent state. One statement sees one state by itself, so a store may run it
    /// outside any transaction: PostgreSQL then answers in one round trip, where `read`
    /// costs three. Work that reads twice (a page, then something about it) must use `read`.
    /// By default, this is `read`.
    fn read_one<T>(&self, work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>) -> RepoResult<T> {
        self.read(work)
    }
}

impl<S: Store + ?Sized> Store for &S {
    fn read<T>(&self, work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>) -> RepoResult<T> {
        (**self).read(work)
    }

    fn write<T>(&self, work: impl FnMut(&mut dyn Transaction) -> RepoResult<T>) -> RepoResult<T> {
        (**self).write(work)
    }

    fn read_one<T>(&self, work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>) -> RepoResult<T> {
        (**self).read_one(work)
    }
}

impl<S: Store + ?Sized> Store for std::sync::Arc<S> {
    fn read<T>(&self, work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>) -> RepoResult<T> {
        (**self).read(work)
    }

    fn write<T>(&self, work: impl FnMut(&mut dyn Transaction) -> RepoResult<T>) -> RepoResult<T> {
        (**self).write(work)
    }

    fn read_one<T>(&self, work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>) -> RepoResult<T> {
        (**self).read_one(work)
    }
}

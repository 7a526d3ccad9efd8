//! The one error type of the domain layer.
//!
//! Every variant maps to exactly one stable error code of the API contract
//! ([`DomainError::code`]); the HTTP layer maps codes to statuses, the store maps
//! database failures into [`DomainError::Unavailable`] and [`DomainError::Storage`].

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use crate::hold::HoldEnd;
use crate::ids::{CategoryId, HoldId, OrderId, PetId};
use crate::model::PetStatus;
use crate::money::Total;
use crate::permission::Permission;
use crate::validation::ValidationError;

mod lines;

pub use lines::LineRefusal;
use lines::{delivery_code, lines_refused, refused_code};

/// The kinds of resource a [`DomainError::NotFound`] can be about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resource {
    /// A pet.
    Pet,
    /// A category.
    Category,
    /// An order.
    Order,
    /// The inventory entry of a pet.
    InventoryItem,
    /// A pet's price.
    Price,
    /// An API key.
    Key,
    /// A webhook subscription.
    Webhook,
    /// A hold.
    Hold,
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Resource::Pet => "pet",
            Resource::Category => "category",
            Resource::Order => "order",
            Resource::InventoryItem => "inventory item",
            Resource::Price => "price of pet",
            Resource::Key => "key",
            Resource::Webhook => "webhook",
            Resource::Hold => "hold",
        })
    }
}

/// Everything a use case can refuse or fail with.
///
/// Business refusals carry what a client needs to understand them; the infrastructure
/// variants ([`Unavailable`](Self::Unavailable), [`Storage`](Self::Storage),
/// [`OutcomeUnknown`](Self::OutcomeUnknown)) carry text meant for the operator's log, never
/// for the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DomainError {
    /// Input broke a field rule.
    #[error(transparent)]
    Validation(#[from] ValidationError),
    /// No such resource, or one the caller may not see (the two are not told apart).
    #[error("{resource} {id} not found")]
    NotFound {
        /// What kind of resource was asked for.
        resource: Resource,
        /// The id that was asked for.
        id: i64,
    },
    /// The caller's role does not allow the operation.
    #[error("a {role} key may not do this")]
    Forbidden {
        /// The caller's role, as the API spells it.
        role: &'static str,
        /// What the operation requires.
        needs: Permission,
    },
    /// Another category already has this name (compared case-insensitively).
    #[error("a category named {name:?} already exists")]
    CategoryExists {
        /// The name that was asked for.
        name: String,
    },
    /// The category still has pets.
    #[error("category {id} still has pets")]
    CategoryInUse {
        /// The category.
        id: CategoryId,
    },
    /// The pet still has open orders.
    #[error("pet {id} has open orders")]
    PetHasOpenOrders {
        /// The pet.
        id: PetId,
    },
    /// Orders can only be placed for an `available` pet.
    #[error("pet {id} is {status}, not available")]
    PetNotAvailable {
        /// The pet.
        id: PetId,
        /// Its status now.
        status: PetStatus,
    },
    /// Not enough units in stock for the order.
    #[error("pet {pet_id} has {available} in stock, {requested} requested")]
    InsufficientStock {
        /// The pet.
        pet_id: PetId,
        /// Units the order asked for.
        requested: u32,
        /// Units in stock now.
        available: u32,
    },
    /// A checkout names a pet on two lines: each pet is one line, with all its units.
    #[error("line {line_no} names pet {pet_id} again: give each pet one line, with all its units")]
    PetRepeated {
        /// The pet.
        pet_id: PetId,
        /// The line that names it again, from 1.
        line_no: u16,
    },
    /// A checkout line's pet has no price: a checkout sells at a price, or not at all.
    #[error("pet {pet_id} has no price")]
    PriceMissing {
        /// The pet.
        pet_id: PetId,
    },
    /// Lines of a checkout were refused; nothing was placed. Each line is named with its
    /// refusal, and the code is the most telling of theirs (`unknown_pet`, then
    /// `price_missing`, then `insufficient_stock`, then `pet_not_available`).
    #[error("{}", lines_refused(.lines))]
    CheckoutRefused {
        /// Every refused line, in order.
        lines: Vec<LineRefusal>,
    },
    /// Lines of a delivery were refused; nothing was received. Each line is named with its
    /// refusal, and the code is the most telling of theirs (`precondition_failed`: a line's
    /// pet changed since it was entered; otherwise the first line's).
    #[error("{}", lines_refused(.lines))]
    DeliveryRefused {
        /// Every refused line, in order.
        lines: Vec<LineRefusal>,
    },
    /// A checkout's lines come to another total than the one the client expected: a price
    /// changed since the basket was shown. Nothing was placed.
    #[error(
        "the lines come to {}, not the {} expected: a price changed",
        .total.get(),
        .expected.get()
    )]
    TotalMismatch {
        /// The total the client expected.
        expected: Total,
        /// What the lines come to now.
        total: Total,
    },
    /// A checkout of more than one line, or a hold, waits for the upgrade of the database to
    /// be finished (`petstore migrate --finish`): a node of the older version may still serve,
    /// and would read such an order as its first line only, or not count held units.
    #[error("a checkout of more than one line, or a hold, waits for the upgrade to be finished")]
    UpgradeUnfinished,
    /// The hold has ended, or its expiry has passed (`how` is then `Expired`, whether or not
    /// the sweeper has ended it yet): it can be neither checked out nor released.
    #[error("hold {id} {}", hold_ended(*.how))]
    HoldEnded {
        /// The hold.
        id: HoldId,
        /// How it ended.
        how: HoldEnd,
    },
    /// A hold asks for a life this shop does not give: 1 s to its longest
    /// (`--hold-ttl-max`).
    #[error("a hold may live 1 to {longest} s here, not {asked} s")]
    HoldTooLong {
        /// The seconds asked for.
        asked: u32,
        /// The most this shop allows.
        longest: u32,
    },
    /// A complete order cannot be cancelled.
    #[error("order {id} is complete and cannot be cancelled")]
    OrderNotCancellable {
        /// The order.
        id: OrderId,
    },
    /// A change the rules forbid, such as making a complete order open again.
    #[error("{0}")]
    InvalidTransition(Cow<'static, str>),
    /// A body names a category that does not exist.
    #[error("category {id} does not exist")]
    UnknownCategory {
        /// The category id given.
        id: CategoryId,
    },
    /// A body names a pet that does not exist.
    #[error("pet {id} does not exist")]
    UnknownPet {
        /// The pet id given.
        id: PetId,
    },
    /// The resource changed since the client read it (its precondition does not hold).
    #[error("the {0} changed since it was read")]
    PreconditionFailed(Resource),
    /// An idempotency key was used before for a different request.
    #[error("this idempotency key was used for a different request")]
    IdempotencyKeyReused,
    /// A webhook URL's host is a literal address deliveries may not go to (loopback,
    /// private, link-local, reserved), and the service does not allow private targets.
    #[error("{host} is a private or reserved address; webhooks go to public addresses only")]
    ForbiddenTarget {
        /// The host as written in the URL.
        host: String,
    },
    /// The store cannot serve the request now (busy, locked, out of connections); retrying later may work.
    #[error("storage unavailable: {0}")]
    Unavailable(#[source] Failure),
    /// The store failed in a way a retry will not fix. The text is for the log only.
    #[error("storage failure: {0}")]
    Storage(#[source] Failure),
    /// The store cannot tell whether a write took effect: its commit was under way when the
    /// disk or the connection to the database failed. It may have, so the caller must not
    /// take it as refused; a retry under the same idempotency key answers as the first did if
    /// the write took effect, and makes it once if not. The text is for the log only.
    #[error("outcome unknown: {0}")]
    OutcomeUnknown(#[source] Failure),
}

/// How the message of [`DomainError::HoldEnded`] says the hold ended.
fn hold_ended(how: HoldEnd) -> &'static str {
    match how {
        HoldEnd::Released => "was released",
        HoldEnd::Expired => "has expired",
        HoldEnd::Consumed => "was checked out",
    }
}

/// What failed underneath a use case, for the operator's log: a description and, where there
/// is one, the error that caused it (a database error, say), kept for `Error::source`.
#[derive(Debug, Clone)]
pub struct Failure {
    message: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl Failure {
    /// A failure described by `message`, with no error underneath.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            source: None,
        }
    }

    /// A failure caused by `source`, described by its message.
    pub fn caused_by(source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self {
            message: source.to_string(),
            source: Some(Arc::new(source)),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|source| source as &(dyn std::error::Error + 'static))
    }
}

/// Two failures are equal when they say the same thing (errors underneath are not comparable).
impl PartialEq for Failure {
    fn eq(&self, other: &Self) -> bool {
        self.message == other.message
    }
}

impl Eq for Failure {}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Self::new(message)
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Self {
        Self::new(message)
    }
}

impl DomainError {
    /// The contract's stable, machine-readable error code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            DomainError::Validation(_) => "validation_failed",
            DomainError::NotFound { .. } => "not_found",
            DomainError::Forbidden { .. } => "forbidden",
            DomainError::CategoryExists { .. } => "category_exists",
            DomainError::CategoryInUse { .. } => "category_in_use",
            DomainError::PetHasOpenOrders { .. } => "pet_has_open_orders",
            DomainError::PetNotAvailable { .. } => "pet_not_available",
            DomainError::InsufficientStock { .. } => "insufficient_stock",
            DomainError::PriceMissing { .. } => "price_missing",
            DomainError::PetRepeated { .. } => "pet_repeated",
            DomainError::CheckoutRefused { lines } => refused_code(lines),
            DomainError::DeliveryRefused { lines } => delivery_code(lines),
            DomainError::TotalMismatch { .. } => "total_mismatch",
            DomainError::UpgradeUnfinished => "upgrade_unfinished",
            DomainError::HoldEnded {
                how: HoldEnd::Expired,
                ..
            } => "hold_expired",
            DomainError::HoldEnded { .. } => "hold_ended",
            DomainError::HoldTooLong { .. } => "hold_too_long",
            DomainError::OrderNotCancellable { .. } => "order_not_cancellable",
            DomainError::InvalidTransition(_) => "invalid_transition",
            DomainError::UnknownCategory { .. } => "unknown_category",
            DomainError::UnknownPet { .. } => "unknown_pet",
            DomainError::PreconditionFailed(_) => "precondition_failed",
            DomainError::IdempotencyKeyReused => "idempotency_key_reused",
            DomainError::ForbiddenTarget { .. } => "forbidden_target",
            DomainError::Unavailable(_) => "unavailable",
            DomainError::Storage(_) => "internal",
            DomainError::OutcomeUnknown(_) => "outcome_unknown",
        }
    }

    /// True for the errors that mean "the infrastructure failed", as opposed to a refusal
    /// by the rules. Their text must not reach a client.
    pub fn is_infrastructure(&self) -> bool {
        matches!(
            self,
            DomainError::Unavailable(_) | DomainError::Storage(_) | DomainError::OutcomeUnknown(_)
        )
    }

    /// A storage failure described by `message` (a broken invariant of the stored data).
    pub fn storage(message: impl Into<String>) -> Self {
        DomainError::Storage(Failure::new(message))
    }

    pub(crate) fn not_found(resource: Resource, id: impl Into<i64>) -> Self {
        DomainError::NotFound {
            resource,
            id: id.into(),
        }
    }
}

#[cfg(test)]
mod tests;

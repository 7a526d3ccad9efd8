//! What a job names before it runs (the row it will read or change, the idempotency key it
//! will look up, how fresh its reads must be), so that a burst can fetch for all its jobs at
//! once.

use petstore_core::{OwnerId, PetId};

use crate::freshness::Freshness;

/// A row a piece of work says it will read, named before it runs (a pet id from a request's
/// path): a burst can fetch the rows its jobs name in one statement instead of one each.
/// Naming a row is a hint; the work reads what it needs whether or not it was fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Row {
    /// A pet's row: the pet, its stock and its open orders.
    Pet(PetId),
}

/// The idempotency key a create will look up, named before it runs (the request's
/// `Idempotency-Key`, and the owner it is scoped to): a burst of writes looks up the records
/// of every key its jobs name in one statement. A hint too, as [`Row`] is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyName {
    /// The key's owner (the caller's key id).
    pub owner: OwnerId,
    /// The client's key.
    pub key: String,
}

/// What a write names before it runs: the rows it will change (a checkout's, one per line)
/// and the idempotency key it will look up, where its caller knows them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteNames {
    /// The rows the work will change.
    pub rows: Vec<Row>,
    /// The idempotency key the work will look up.
    pub key: Option<KeyName>,
}

impl From<Option<Row>> for WriteNames {
    fn from(row: Option<Row>) -> Self {
        Self {
            rows: row.into_iter().collect(),
            key: None,
        }
    }
}

/// What a read names before it runs: the row it will read, if its caller knows it, and how
/// fresh what it reads must be.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadNames {
    /// The row the work will read.
    pub row: Option<Row>,
    /// How fresh its answer must be, and so which servers may serve it.
    pub freshness: Freshness,
}

impl From<Option<Row>> for ReadNames {
    fn from(row: Option<Row>) -> Self {
        Self {
            row,
            freshness: Freshness::default(),
        }
    }
}

/// The pets `rows` name, each once, in id order.
pub(crate) fn named_pets<'r>(rows: impl Iterator<Item = &'r Row>) -> Vec<i64> {
    let mut pets: Vec<i64> = rows
        .map(|row| match row {
            Row::Pet(id) => id.get(),
        })
        .collect();
    pets.sort_unstable();
    pets.dedup();
    pets
}

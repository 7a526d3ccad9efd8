//! Rows a burst fetched in one statement for the jobs that named them ([`Row`](crate::Row)):
//! a job's read of one of them is answered from here, without a statement of its own.

use std::collections::HashMap;

use petstore_core::{IdempotencyRecord, InventoryItem, OwnerId, PetId};

use crate::records::{PetRowRecord, PetRowValues};

/// The pets a burst fetched, each as found (`None`: asked for, and it does not exist), and the
/// idempotency records a write burst looked up for the keys its jobs named.
#[derive(Debug, Default)]
pub(crate) struct Fetched {
    pets: HashMap<i64, Option<PetRowValues>>,
    records: HashMap<(i64, String), Option<IdempotencyRecord>>,
    /// Whether each row is served once, to the first read of it (a write burst: the job that
    /// read it may change it, and it is forgotten then anyway).
    once: bool,
}

impl Fetched {
    /// What one statement of a read burst found for the pets `asked`, served to every read.
    /// A row that is not a valid pet is left out, so the job that named it reads it itself
    /// and reports it as it would have.
    pub(crate) fn pets(asked: &[i64], found: Vec<PetRowRecord>) -> Self {
        let mut fetched = Self {
            pets: asked.iter().map(|&id| (id, None)).collect(),
            records: HashMap::new(),
            once: false,
        };
        fetched.add(found);
        fetched
    }

    /// The rows a write burst locked, each served once. A pet not found may exist, locked by
    /// another transaction: its job reads it itself.
    pub(crate) fn locked(found: Vec<PetRowRecord>) -> Self {
        let mut fetched = Self {
            pets: HashMap::new(),
            records: HashMap::new(),
            once: true,
        };
        fetched.add(found);
        fetched
    }

    fn add(&mut self, found: Vec<PetRowRecord>) {
        for row in found {
            let id = row.pet.id;
            match PetRowValues::try_from(row) {
                Ok(values) => self.pets.insert(id, Some(values)),
                Err(_) => self.pets.remove(&id),
            };
        }
    }

    /// What was fetched of pet `id`: `None` if nothing is known of it here, and `Some(None)`
    /// if it was asked for and does not exist.
    pub(crate) fn pet(&mut self, id: PetId) -> Option<Option<PetRowValues>> {
        if self.once {
            self.pets.remove(&id.get())
        } else {
            self.pets.get(&id.get()).cloned()
        }
    }

    /// The inventory entry of what was fetched of pet `id`, as [`pet`](Self::pet) answers,
    /// without copying the rest of the row (a point read of stock needs no more).
    pub(crate) fn stock(&mut self, id: PetId) -> Option<Option<InventoryItem>> {
        if self.once {
            self.pets
                .remove(&id.get())
                .map(|row| row.map(|row| row.stock))
        } else {
            self.pets
                .get(&id.get())
                .map(|row| row.as_ref().map(|row| row.stock))
        }
    }

    /// Keeps what a lookup found of the records of `asked` (owner, key): each found in `found`,
    /// or known to be absent.
    pub(crate) fn add_records(
        &mut self,
        asked: Vec<(i64, String)>,
        found: Vec<(i64, String, IdempotencyRecord)>,
    ) {
        self.records
            .extend(asked.into_iter().map(|name| (name, None)));
        for (owner, key, record) in found {
            if let Some(slot) = self.records.get_mut(&(owner, key)) {
                *slot = Some(record);
            }
        }
    }

    /// What the lookup found of `owner`'s key `key`: `None` if it was not looked up, and
    /// `Some(None)` if it had no record. Served once: the job that asked records the key
    /// itself (held back) if it runs.
    pub(crate) fn record(
        &mut self,
        owner: OwnerId,
        key: &str,
    ) -> Option<Option<IdempotencyRecord>> {
        self.records.remove(&(owner.get(), key.to_owned()))
    }

    /// Forgets pet `pet`'s row, or every row (`None`): a write is about to change it.
    pub(crate) fn forget(&mut self, pet: Option<PetId>) {
        match pet {
            Some(id) => {
                self.pets.remove(&id.get());
            }
            None => {
                self.pets.clear();
                self.records.clear();
            }
        }
    }
}

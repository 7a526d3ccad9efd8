//! The one cache of pets' rows a transaction reads without a statement of its own
//! ([`KnownRows`]). The idempotency records a burst looked up are `key_records.rs`'s.
//!
//! A pet's row holds what the stock rules read right after the pet: its inventory entry, its
//! count of open orders and the units they hold. Read once, each part is served from here: an order reads its pet's
//! row once where it would send three statements. A burst fills it for the rows its jobs
//! named ([`Row`](crate::Row)), in one statement for all of them (`postgres/fetch.rs`); a read
//! of one row by a statement of its own adds that row.
//!
//! What is known stays true until a write: in a write transaction the row is locked
//! (PostgreSQL) or the database is (SQLite's one writer), and a read sees one snapshot or was
//! asked for before the rows were read. Every writer of pets, stock or orders forgets the row
//! it changes first (`Tx::forget_pet_row`), since the triggers of `orders` change the count.

use std::collections::HashMap;

use petstore_core::{InventoryItem, Pet, PetId, Stock};

use crate::records::{PetRowRecord, PetRowValues};

/// Pets' rows known without a statement. Each part of a row is
/// served once where a job may change it (a write, or a transaction's own cache), and to
/// every read in a burst of reads.
#[derive(Debug)]
pub(crate) struct KnownRows {
    /// Each pet asked for: `None` if it does not exist, else the parts not yet served.
    pets: HashMap<i64, Option<RowParts>>,
    /// Whether each part is served once (taken) or to every read (cloned).
    once: bool,
    /// Whether the stock ledger had begun, where the statement that read the rows said:
    /// once begun it never ends, and a multi-line checkout only asks it to refuse one.
    ledger_open: Option<bool>,
}

/// The parts of a pet's row not yet served.
#[derive(Debug, Clone)]
struct RowParts {
    pet: Option<Pet>,
    stock: Option<InventoryItem>,
    open_orders: Option<u64>,
    committed: Option<Stock>,
}

impl KnownRows {
    /// Nothing known yet, each part to be served once: one job's transaction, or a burst of
    /// writes.
    pub(crate) fn served_once() -> Self {
        Self {
            pets: HashMap::new(),
            once: true,
            ledger_open: None,
        }
    }

    /// What one statement of a burst of reads found for the pets `asked`, served to every
    /// read. A row that is not a valid pet is left out, so the job that named it reads it
    /// itself and reports it as it would have.
    pub(crate) fn read_for_all(asked: &[i64], found: Vec<PetRowRecord>) -> Self {
        let mut known = Self {
            pets: asked.iter().map(|&id| (id, None)).collect(),
            once: false,
            ledger_open: None,
        };
        known.add(found);
        known
    }

    /// The rows a burst of writes locked, each part served once. A pet not found may exist,
    /// locked by another transaction: its job reads it itself.
    pub(crate) fn locked(found: Vec<PetRowRecord>, ledger_open: Option<bool>) -> Self {
        let mut known = Self::served_once();
        known.add(found);
        known.ledger_open = ledger_open;
        known
    }

    /// Whether the stock ledger had begun, if the statement that read the rows said.
    pub(crate) fn ledger_open(&self) -> Option<bool> {
        self.ledger_open
    }

    fn add(&mut self, found: Vec<PetRowRecord>) {
        for row in found {
            let id = row.pet.id;
            match PetRowValues::try_from(row) {
                Ok(row) => {
                    let pet = row.pet.clone();
                    self.keep(id, Some(pet), row);
                }
                Err(_) => {
                    self.pets.remove(&id);
                }
            }
        }
    }

    /// Keeps what a read of a pet's row found beside the pet, which the rules read next (its
    /// stock and open orders), and gives the pet to the read.
    pub(crate) fn keep_beside(&mut self, row: PetRowValues) -> Pet {
        let pet = row.pet.clone();
        self.keep(pet.id.get(), None, row);
        pet
    }

    /// Keeps `row`'s parts, the pet itself only if `pet` gives it.
    fn keep(&mut self, id: i64, pet: Option<Pet>, row: PetRowValues) {
        let PetRowValues {
            stock,
            open_orders,
            committed,
            ..
        } = row;
        let parts = RowParts {
            pet,
            stock: Some(stock),
            open_orders: Some(open_orders),
            committed: Some(committed),
        };
        self.pets.insert(id, Some(parts));
    }

    /// Whether anything is known of pet `id` here (a burst's lock statement found it).
    pub(crate) fn has(&self, id: PetId) -> bool {
        self.pets.contains_key(&id.get())
    }

    /// Pet `id`: `None` if nothing is known of it here, `Some(None)` if it does not exist.
    pub(crate) fn pet(&mut self, id: PetId) -> Option<Option<Pet>> {
        self.part(id, |parts| &mut parts.pet)
    }

    /// Pet `id`'s inventory entry, as [`pet`](Self::pet) answers.
    pub(crate) fn stock(&mut self, id: PetId) -> Option<Option<InventoryItem>> {
        self.part(id, |parts| &mut parts.stock)
    }

    /// Pet `id`'s count of open orders, where its row is known.
    pub(crate) fn open_orders(&mut self, id: PetId) -> Option<u64> {
        self.part(id, |parts| &mut parts.open_orders).flatten()
    }

    /// The units in pet `id`'s open orders, where its row is known.
    pub(crate) fn committed(&mut self, id: PetId) -> Option<Stock> {
        self.part(id, |parts| &mut parts.committed).flatten()
    }

    fn part<T: Clone>(
        &mut self,
        id: PetId,
        part: impl FnOnce(&mut RowParts) -> &mut Option<T>,
    ) -> Option<Option<T>> {
        let once = self.once;
        match self.pets.get_mut(&id.get())? {
            None => Some(None),
            Some(parts) => {
                let slot = part(parts);
                let value = if once { slot.take() } else { slot.clone() };
                value.map(Some)
            }
        }
    }

    /// Forgets pet `pet`'s row, or every row (`None`): a write is about to change it, or the
    /// transaction rolled back.
    pub(crate) fn forget(&mut self, pet: Option<PetId>) {
        match pet {
            Some(id) => {
                self.pets.remove(&id.get());
            }
            None => {
                self.pets.clear();
            }
        }
    }
}

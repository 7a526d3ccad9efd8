//! Rows a burst fetched in one statement for the jobs that named them ([`Row`](crate::Row)):
//! a job's read of one of them is answered from here, without a statement of its own.

use std::collections::HashMap;

use petstore_core::PetId;

use crate::records::{PetRowRecord, PetRowValues};

/// The pets a burst asked for, each as found: `None` for one that does not exist.
#[derive(Debug, Default)]
pub(crate) struct Fetched {
    pets: HashMap<i64, Option<PetRowValues>>,
}

impl Fetched {
    /// What one statement found for the pets `asked`. A row that is not a valid pet is left
    /// out, so the job that named it reads it itself and reports it as it would have.
    pub(crate) fn pets(asked: &[i64], found: Vec<PetRowRecord>) -> Self {
        let mut pets: HashMap<i64, Option<PetRowValues>> =
            asked.iter().map(|&id| (id, None)).collect();
        for row in found {
            let id = row.pet.id;
            match PetRowValues::try_from(row) {
                Ok(values) => pets.insert(id, Some(values)),
                Err(_) => pets.remove(&id),
            };
        }
        Self { pets }
    }

    /// What was fetched of pet `id`: `None` if it was not asked for (or is not valid), and
    /// `Some(None)` if it was and does not exist.
    pub(crate) fn pet(&self, id: PetId) -> Option<Option<&PetRowValues>> {
        self.pets.get(&id.get()).map(Option::as_ref)
    }
}

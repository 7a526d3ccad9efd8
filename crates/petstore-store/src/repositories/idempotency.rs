//! What idempotency keys were answered, in the `idempotency_records` table: the statements
//! both backends read and forget records with. How a record is written is each backend's own
//! (`sqlite/tx.rs`; PostgreSQL holds it back with a write's other rows, `postgres/tx.rs`).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use petstore_core::{IdempotencyRecord, OwnerId, RepoResult};

use super::Tx;
use crate::error::QueryResultExt;
use crate::records::IdempotencyRow;
use crate::schema::idempotency_records;
use crate::schema::sql_types::Time;
use crate::statements::convert_one;

impl Tx<'_> {
    /// The record of `owner`'s key `key` as stored, expired or not, noted as found if there
    /// is one ([`KeyRecords::note_stored`](crate::key_records::KeyRecords::note_stored)). No
    /// lock: two creates with one key may both find nothing, and the primary key lets only
    /// one of them record it.
    pub(crate) fn stored_idempotency_record(
        &mut self,
        owner: OwnerId,
        key: &str,
    ) -> RepoResult<Option<IdempotencyRecord>> {
        let row = idempotency_records::table
            .find((owner.get(), key))
            .select(IdempotencyRow::as_select())
            .get_result(self.flushed())
            .optional()
            .or_storage()?;
        let found = convert_one(row)?;
        Ok(match self.key_records() {
            Some(keys) => keys.note_stored(owner, key, found),
            None => found,
        })
    }

    /// Deletes the records made before `before`: the store's upkeep, never a request's.
    pub(crate) fn delete_idempotency_records_before(
        &mut self,
        before: DateTime<Utc>,
    ) -> RepoResult<()> {
        diesel::delete(
            idempotency_records::table.filter(idempotency_records::recorded_at.lt(Time(before))),
        )
        .execute(self.flushed())
        .or_storage()?;
        Ok(())
    }
}

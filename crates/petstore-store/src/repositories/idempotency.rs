//! What idempotency keys were answered, in the `idempotency_records` table.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use petstore_core::{IdempotencyReader, IdempotencyRecord, IdempotencyWriter, OwnerId, RepoResult};

use super::{LockSpace, Tx};
use crate::error::QueryResultExt;
use crate::records::IdempotencyRow;
use crate::schema::idempotency_records;
use crate::schema::sql_types::Time;
use crate::statements::convert_one;

impl IdempotencyReader for Tx<'_> {
    fn idempotency_record(
        &mut self,
        owner: OwnerId,
        key: &str,
    ) -> RepoResult<Option<IdempotencyRecord>> {
        // A create under this key asks first: two requests with the same key, on any
        // connections or nodes, take turns, and the second finds the first's record.
        self.take_turns_named(LockSpace::IdempotencyKey, || {
            format!("{}:{key}", owner.get())
        })?;
        let row = idempotency_records::table
            .find((owner.get(), key))
            .select(IdempotencyRow::as_select())
            .get_result(self.conn())
            .optional()
            .or_storage()?;
        convert_one(row)
    }
}

impl IdempotencyWriter for Tx<'_> {
    fn insert_idempotency_record(
        &mut self,
        owner: OwnerId,
        key: &str,
        record: &IdempotencyRecord,
    ) -> RepoResult<()> {
        diesel::insert_into(idempotency_records::table)
            .values((
                idempotency_records::owner_id.eq(owner.get()),
                idempotency_records::idempotency_key.eq(key),
                idempotency_records::fingerprint.eq(record.fingerprint.as_slice()),
                idempotency_records::response.eq(record.response.as_slice()),
                idempotency_records::recorded_at.eq(Time(record.recorded_at)),
            ))
            .execute(self.conn())
            .or_storage()?;
        Ok(())
    }

    fn purge_idempotency_records(&mut self, before: DateTime<Utc>) -> RepoResult<()> {
        diesel::delete(
            idempotency_records::table.filter(idempotency_records::recorded_at.lt(Time(before))),
        )
        .execute(self.conn())
        .or_storage()?;
        Ok(())
    }
}

//! What idempotency keys were answered, in the `idempotency_records` table.

use super::SqliteTx;
use crate::error::QueryResultExt;
use crate::sqlite::rows::{IdempotencyRow, NewIdempotencyRow, format_time};
use crate::sqlite::schema::idempotency_records;
use crate::statements::convert_one;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use petstore_core::{IdempotencyReader, IdempotencyWriter};
use petstore_core::{IdempotencyRecord, OwnerId, RepoResult};

impl IdempotencyReader for SqliteTx<'_> {
    fn idempotency_record(
        &mut self,
        owner: OwnerId,
        key: &str,
    ) -> RepoResult<Option<IdempotencyRecord>> {
        let row = idempotency_records::table
            .find((owner.get(), key))
            .select(IdempotencyRow::as_select())
            .get_result(self.conn)
            .optional()
            .or_storage()?;
        convert_one(row)
    }
}

impl IdempotencyWriter for SqliteTx<'_> {
    fn insert_idempotency_record(
        &mut self,
        owner: OwnerId,
        key: &str,
        record: &IdempotencyRecord,
    ) -> RepoResult<()> {
        let row = NewIdempotencyRow {
            owner_id: owner.get(),
            idempotency_key: key,
            fingerprint: &record.fingerprint,
            response: &record.response,
            recorded_at: format_time(record.recorded_at),
        };
        diesel::insert_into(idempotency_records::table)
            .values(&row)
            .execute(self.conn)
            .or_storage()?;
        Ok(())
    }

    fn purge_idempotency_records(&mut self, before: DateTime<Utc>) -> RepoResult<()> {
        diesel::delete(
            idempotency_records::table
                .filter(idempotency_records::recorded_at.lt(format_time(before))),
        )
        .execute(self.conn)
        .or_storage()?;
        Ok(())
    }
}

//! Staff sessions, in the `staff_sessions` table: under their token's hash, never the token.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use petstore_core::{KeyId, RepoResult, SessionReader, SessionWriter, StaffSession};

use super::Tx;
use crate::error::{QueryResultExt, StoreError};
use crate::schema::sql_types::Time;
use crate::schema::staff_sessions;

impl SessionReader for Tx<'_> {
    fn staff_session(&mut self, hash: &[u8; 32]) -> RepoResult<Option<StaffSession>> {
        let row: Option<(i64, DateTime<Utc>, DateTime<Utc>)> = staff_sessions::table
            .find(hash.as_slice())
            .select((
                staff_sessions::key_id,
                staff_sessions::started_at,
                staff_sessions::seen_at,
            ))
            .get_result(self.flushed())
            .optional()
            .or_storage()?;
        row.map(|(key, started_at, seen_at)| {
            Ok(StaffSession {
                key: KeyId::new(key).map_err(|e| StoreError::Corrupt(e.to_string()))?,
                started_at,
                seen_at,
            })
        })
        .transpose()
    }
}

impl SessionWriter for Tx<'_> {
    fn insert_staff_session(&mut self, hash: &[u8; 32], session: &StaffSession) -> RepoResult<()> {
        let StaffSession {
            key,
            started_at,
            seen_at,
        } = *session;
        diesel::insert_into(staff_sessions::table)
            .values((
                staff_sessions::token_hash.eq(hash.as_slice()),
                staff_sessions::key_id.eq(key.get()),
                staff_sessions::started_at.eq(Time(started_at)),
                staff_sessions::seen_at.eq(Time(seen_at)),
            ))
            .execute(self.flushed())
            .or_storage()?;
        Ok(())
    }

    fn touch_staff_session(&mut self, hash: &[u8; 32], at: DateTime<Utc>) -> RepoResult<()> {
        diesel::update(staff_sessions::table.find(hash.as_slice()))
            .set(staff_sessions::seen_at.eq(Time(at)))
            .execute(self.flushed())
            .or_storage()?;
        Ok(())
    }

    fn delete_staff_session(&mut self, hash: &[u8; 32]) -> RepoResult<()> {
        diesel::delete(staff_sessions::table.find(hash.as_slice()))
            .execute(self.flushed())
            .or_storage()?;
        Ok(())
    }

    fn delete_key_staff_sessions(&mut self, key: KeyId) -> RepoResult<()> {
        diesel::delete(staff_sessions::table.filter(staff_sessions::key_id.eq(key.get())))
            .execute(self.flushed())
            .or_storage()?;
        Ok(())
    }

    fn delete_ended_staff_sessions(
        &mut self,
        seen_by: DateTime<Utc>,
        started_by: DateTime<Utc>,
    ) -> RepoResult<()> {
        diesel::delete(
            staff_sessions::table.filter(
                staff_sessions::seen_at
                    .le(Time(seen_by))
                    .or(staff_sessions::started_at.le(Time(started_by))),
            ),
        )
        .execute(self.flushed())
        .or_storage()?;
        Ok(())
    }
}

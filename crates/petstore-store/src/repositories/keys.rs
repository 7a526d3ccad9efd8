//! API keys, in the `api_keys` table: prefixes and hashes, never secrets.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use petstore_core::{
    ApiKey, DomainError, KeyId, KeyQuery, KeyReader, KeyWriter, NewApiKey, RepoResult, Role,
    StoredKey,
};

use super::{LockSpace, Tx, row_for_update};
use crate::error::{QueryResultExt, StoreError, Violation};
use crate::records::KeyRecord;
use crate::schema::api_keys;
use crate::schema::sql_types::Time;
use crate::statements::{convert, convert_one, exactly_one, probe, refuse};

impl KeyReader for Tx<'_> {
    fn key(&mut self, id: KeyId) -> RepoResult<Option<ApiKey>> {
        // Revoking a key waits for any other change to it.
        let row = row_for_update!(
            self,
            api_keys::table
                .find(id.get())
                .select(KeyRecord::as_select())
        )
        .or_storage()?;
        convert_one(row)
    }

    fn keys(&mut self, query: &KeyQuery) -> RepoResult<Vec<ApiKey>> {
        let rows = self
            .page(
                api_keys::table
                    .filter(api_keys::id.gt(query.after.map_or(0, KeyId::get)))
                    .order(api_keys::id.asc())
                    .select(KeyRecord::as_select()),
                probe(query.limit),
            )
            .or_storage()?;
        convert(rows)
    }

    fn keys_with_prefix(&mut self, prefix: &str) -> RepoResult<Vec<StoredKey>> {
        let rows = api_keys::table
            .filter(api_keys::prefix.eq(prefix))
            .select(KeyRecord::as_select())
            .load(self.flushed())
            .or_storage()?;
        convert(rows)
    }

    fn has_active_key(&mut self, role: Option<Role>) -> RepoResult<bool> {
        // Bootstrapping asks this before it creates the first admin key: nodes starting
        // together take turns, so only the first creates one.
        self.take_turns(LockSpace::Bootstrap, 0)?;
        let mut active = api_keys::table
            .filter(api_keys::revoked_at.is_null())
            .into_boxed();
        if let Some(role) = role {
            active = active.filter(api_keys::role.eq(role.as_str()));
        }
        diesel::select(diesel::dsl::exists(active))
            .get_result(self.flushed())
            .or_storage()
    }

    fn revoked_key_count(&mut self) -> RepoResult<u64> {
        let revoked: i64 = api_keys::table
            .filter(api_keys::revoked_at.is_not_null())
            .count()
            .get_result(self.flushed())
            .or_storage()?;
        Ok(revoked.unsigned_abs())
    }
}

impl KeyWriter for Tx<'_> {
    fn insert_key(
        &mut self,
        new: &NewApiKey,
        prefix: &str,
        hash: &[u8; 32],
        created_at: DateTime<Utc>,
    ) -> RepoResult<ApiKey> {
        let id: i64 = diesel::insert_into(api_keys::table)
            .values((
                api_keys::name.eq(new.name.as_str()),
                api_keys::role.eq(new.role.as_str()),
                api_keys::prefix.eq(prefix),
                api_keys::hash.eq(hash.as_slice()),
                api_keys::created_at.eq(Time(created_at)),
            ))
            .returning(api_keys::id)
            .get_result(self.flushed())
            .map_err(|e| {
                refuse(e, |v| {
                    (v == Violation::Unique).then(|| {
                        DomainError::InvalidTransition("this secret is already a key".into())
                    })
                })
            })?;
        Ok(ApiKey {
            id: KeyId::new(id).map_err(|e| StoreError::Corrupt(e.to_string()))?,
            name: new.name.clone(),
            role: new.role,
            prefix: prefix.to_owned(),
            created_at,
            revoked_at: None,
        })
    }

    fn revoke_key(&mut self, id: KeyId, at: DateTime<Utc>) -> RepoResult<()> {
        let affected = diesel::update(api_keys::table.find(id.get()))
            .set(api_keys::revoked_at.eq(Some(Time(at))))
            .execute(self.flushed())
            .or_storage()?;
        exactly_one(affected, "key", id.get())
    }
}

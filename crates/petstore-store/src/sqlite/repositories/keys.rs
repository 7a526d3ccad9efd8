//! API keys, in the `api_keys` table: prefixes and hashes, never secrets.

use super::SqliteTx;
use crate::error::{QueryResultExt, StoreError, Violation};
use crate::sqlite::limit::limited;
use crate::sqlite::rows::{KeyRow, NewKeyRow, format_time};
use crate::sqlite::schema::api_keys;
use crate::statements::{convert, convert_one, exactly_one, probe, refuse};
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use petstore_core::{ApiKey, DomainError, KeyId, KeyQuery, NewApiKey, RepoResult, Role, StoredKey};
use petstore_core::{KeyReader, KeyWriter};

impl KeyReader for SqliteTx<'_> {
    fn key(&mut self, id: KeyId) -> RepoResult<Option<ApiKey>> {
        let row = api_keys::table
            .find(id.get())
            .select(KeyRow::as_select())
            .get_result(self.conn)
            .optional()
            .or_storage()?;
        convert_one(row)
    }

    fn keys(&mut self, query: &KeyQuery) -> RepoResult<Vec<ApiKey>> {
        let rows = limited(
            api_keys::table
                .filter(api_keys::id.gt(query.after.map_or(0, KeyId::get)))
                .order(api_keys::id.asc())
                .select(KeyRow::as_select()),
            probe(query.limit),
        )
        .load(self.conn)
        .or_storage()?;
        convert(rows)
    }

    fn keys_with_prefix(&mut self, prefix: &str) -> RepoResult<Vec<StoredKey>> {
        let rows = api_keys::table
            .filter(api_keys::prefix.eq(prefix))
            .select(KeyRow::as_select())
            .load(self.conn)
            .or_storage()?;
        convert(rows)
    }

    fn has_active_key(&mut self, role: Option<Role>) -> RepoResult<bool> {
        let mut active = api_keys::table
            .filter(api_keys::revoked_at.is_null())
            .into_boxed();
        if let Some(role) = role {
            active = active.filter(api_keys::role.eq(role.as_str()));
        }
        diesel::select(diesel::dsl::exists(active))
            .get_result(self.conn)
            .or_storage()
    }

    fn revoked_key_count(&mut self) -> RepoResult<u64> {
        let revoked: i64 = api_keys::table
            .filter(api_keys::revoked_at.is_not_null())
            .count()
            .get_result(self.conn)
            .or_storage()?;
        Ok(revoked.unsigned_abs())
    }
}

impl KeyWriter for SqliteTx<'_> {
    fn insert_key(
        &mut self,
        new: &NewApiKey,
        prefix: &str,
        hash: &[u8; 32],
        created_at: DateTime<Utc>,
    ) -> RepoResult<ApiKey> {
        let row = NewKeyRow {
            name: new.name.as_str(),
            role: new.role.as_str(),
            prefix,
            hash,
            created_at: format_time(created_at),
        };
        let id: i64 = diesel::insert_into(api_keys::table)
            .values(&row)
            .returning(api_keys::id)
            .get_result(self.conn)
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
            .set(api_keys::revoked_at.eq(Some(format_time(at))))
            .execute(self.conn)
            .or_storage()?;
        exactly_one(affected, "key", id.get())
    }
}

//! API keys in memory.

use std::borrow::Borrow;

use super::{Catalogue, View};
use super::{next_id, page};
use crate::access::{ApiKey, NewApiKey, Role, StoredKey};
use crate::ids::KeyId;
use crate::query::KeyQuery;
use crate::repository::{KeyReader, KeyWriter, RepoResult};
use chrono::{DateTime, Utc};

impl<C: Borrow<Catalogue>> KeyReader for View<'_, C> {
    fn key(&mut self, id: KeyId) -> RepoResult<Option<ApiKey>> {
        Ok(self.catalogue.borrow().keys.get(&id).map(|k| k.key.clone()))
    }

    fn keys(&mut self, query: &KeyQuery) -> RepoResult<Vec<ApiKey>> {
        let catalogue = self.catalogue.borrow();
        let stored = page(&catalogue.keys, query.after, query.limit, |_| true);
        Ok(stored.into_iter().map(|k| k.key).collect())
    }

    fn keys_with_prefix(&mut self, prefix: &str) -> RepoResult<Vec<StoredKey>> {
        Ok(self
            .catalogue
            .borrow()
            .keys
            .values()
            .filter(|k| k.key.prefix == prefix)
            .cloned()
            .collect())
    }

    fn has_active_key(&mut self, role: Option<Role>) -> RepoResult<bool> {
        Ok(self
            .catalogue
            .borrow()
            .keys
            .values()
            .any(|k| k.key.revoked_at.is_none() && role.is_none_or(|r| k.key.role == r)))
    }

    fn revoked_key_count(&mut self) -> RepoResult<u64> {
        let revoked = self
            .catalogue
            .borrow()
            .keys
            .values()
            .filter(|k| k.key.revoked_at.is_some())
            .count();
        Ok(revoked as u64)
    }
}

impl KeyWriter for View<'_, Catalogue> {
    fn insert_key(
        &mut self,
        new: &NewApiKey,
        prefix: &str,
        hash: &[u8; 32],
        created_at: DateTime<Utc>,
    ) -> RepoResult<ApiKey> {
        let id = next_id(&mut self.catalogue.last_key_id, KeyId::new)?;
        let key = ApiKey {
            id,
            name: new.name.clone(),
            role: new.role,
            prefix: prefix.to_owned(),
            created_at,
            revoked_at: None,
        };
        let stored = StoredKey {
            key: key.clone(),
            hash: *hash,
        };
        self.catalogue.keys.insert(id, stored);
        Ok(key)
    }

    fn revoke_key(&mut self, id: KeyId, at: DateTime<Utc>) -> RepoResult<()> {
        let slot = self
            .catalogue
            .keys
            .get_mut(&id)
            .ok_or_else(|| Self::missing("key", id))?;
        slot.key.revoked_at = Some(at);
        Ok(())
    }
}

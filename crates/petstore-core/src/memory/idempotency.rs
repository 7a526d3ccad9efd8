//! Idempotency records in memory.

use std::borrow::Borrow;

use super::{Catalogue, View};
use crate::error::DomainError;
use crate::idempotency::{IdempotencyRecord, RECORD_LIFETIME};
use crate::ids::OwnerId;
use crate::repository::{IdempotencyReader, IdempotencyWriter, RepoResult};
use chrono::{DateTime, Utc};

impl<C: Borrow<Catalogue>> IdempotencyReader for View<'_, C> {
    fn idempotency_record(
        &mut self,
        owner: OwnerId,
        key: &str,
    ) -> RepoResult<Option<IdempotencyRecord>> {
        Ok(self
            .catalogue
            .borrow()
            .idempotency
            .get(&(owner, key.to_owned()))
            .cloned())
    }
}

impl IdempotencyWriter for View<'_, Catalogue> {
    fn insert_idempotency_record(
        &mut self,
        owner: OwnerId,
        key: &str,
        record: &IdempotencyRecord,
    ) -> RepoResult<()> {
        let records = &mut self.catalogue.idempotency;
        let expired_before = record.recorded_at - RECORD_LIFETIME;
        if let Some(held) = records.get(&(owner, key.to_owned()))
            && held.recorded_at >= expired_before
        {
            return Err(DomainError::Storage(
                "the idempotency key has a fresh record already".into(),
            ));
        }
        records.insert((owner, key.to_owned()), record.clone());
        Ok(())
    }

    fn purge_idempotency_records(&mut self, before: DateTime<Utc>) -> RepoResult<()> {
        self.catalogue
            .idempotency
            .retain(|_, record| record.recorded_at >= before);
        Ok(())
    }
}

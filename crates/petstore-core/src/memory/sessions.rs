//! Staff sessions in memory.

use std::borrow::Borrow;

use chrono::{DateTime, Utc};

use super::{Catalogue, View};
use crate::ids::KeyId;
use crate::repository::{RepoResult, SessionReader, SessionWriter};
use crate::session::StaffSession;

impl<C: Borrow<Catalogue>> SessionReader for View<'_, C> {
    fn staff_session(&mut self, hash: &[u8; 32]) -> RepoResult<Option<StaffSession>> {
        Ok(self.catalogue.borrow().sessions.get(hash).copied())
    }
}

impl SessionWriter for View<'_, Catalogue> {
    fn insert_staff_session(&mut self, hash: &[u8; 32], session: &StaffSession) -> RepoResult<()> {
        self.catalogue.sessions.insert(*hash, *session);
        Ok(())
    }

    fn touch_staff_session(&mut self, hash: &[u8; 32], at: DateTime<Utc>) -> RepoResult<()> {
        if let Some(session) = self.catalogue.sessions.get_mut(hash) {
            session.seen_at = at;
        }
        Ok(())
    }

    fn delete_staff_session(&mut self, hash: &[u8; 32]) -> RepoResult<()> {
        self.catalogue.sessions.remove(hash);
        Ok(())
    }

    fn delete_key_staff_sessions(&mut self, key: KeyId) -> RepoResult<()> {
        self.catalogue
            .sessions
            .retain(|_, session| session.key != key);
        Ok(())
    }

    fn delete_ended_staff_sessions(
        &mut self,
        seen_by: DateTime<Utc>,
        started_by: DateTime<Utc>,
    ) -> RepoResult<()> {
        self.catalogue
            .sessions
            .retain(|_, session| session.seen_at > seen_by && session.started_at > started_by);
        Ok(())
    }
}

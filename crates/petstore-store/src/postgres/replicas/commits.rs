//! The consistency token of a node's writes: where its commits reached on the primary, asked
//! on the connection each commit was made on.

use std::time::Instant;

use diesel::pg::PgConnection;

use super::positions::primary_position;
use super::{Replicas, lock};
use crate::freshness::Position;

/// The position this node's commits reached, or that it is unknown since a commit whose
/// position could not be asked: a position asked after that commit is past it again.
#[derive(Debug, Default)]
pub(super) struct CommitMark {
    pub(super) reached: Option<Position>,
    pub(super) unknown_since: Option<Instant>,
}

impl Replicas {
    /// Where this node's commits have reached, unless a commit's position is unknown.
    pub(in crate::postgres) fn committed(&self) -> Option<Position> {
        let mark = lock(&self.committed);
        match mark.unknown_since {
            Some(_) => None,
            None => mark.reached,
        }
    }

    /// Asks the primary, on the connection a commit was just made on, where it is now, and
    /// keeps it as where this node's commits reached. If it cannot, no token is given until
    /// a position asked after this moment is known.
    pub(in crate::postgres) fn after_commit(&self, conn: &mut PgConnection, timeline: i64) {
        let asked = Instant::now();
        match primary_position(conn, timeline) {
            Ok(position) => {
                self.keep(asked, position);
                let mut mark = lock(&self.committed);
                if mark.unknown_since.is_some_and(|since| since <= asked) {
                    mark.unknown_since = None;
                }
                mark.reached = mark.reached.max(Some(position));
            }
            Err(_) => self.commit_position_unknown(),
        }
    }

    /// A commit was made whose position is not known: no token is given until a position
    /// asked after now is known.
    pub(in crate::postgres) fn commit_position_unknown(&self) {
        lock(&self.committed).unknown_since = Some(Instant::now());
    }
}

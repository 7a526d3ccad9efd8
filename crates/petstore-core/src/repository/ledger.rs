//! The stock ledger's repository traits.

use chrono::{DateTime, Utc};

use super::RepoResult;
use crate::actor::Cause;
use crate::ledger::{Movement, MovementQuery, NewMovement};

/// Reads the stock ledger.
pub trait LedgerReader {
    /// A pet's movements after the query's position, by id, up to `limit + 1` of them.
    fn movements(&mut self, query: &MovementQuery) -> RepoResult<Vec<Movement>>;
    /// Whether the ledger has begun: on a database upgraded from a version without one, once
    /// the upgrade is finished (and so once no node of the older version serves); from the
    /// start on a new one. It never ends.
    fn ledger_open(&mut self) -> RepoResult<bool>;
}

/// Records stock movements.
pub trait LedgerWriter: LedgerReader {
    /// Records `movements`, in order, with ids above every id recorded before, each with
    /// `time` and what is known of its `cause`.
    ///
    /// A store whose ledger has not begun records nothing: a database upgraded from a version
    /// without one begins it when the upgrade is finished (`petstore migrate --finish`), in
    /// one transaction with an opening movement per pet, so that the nodes of the older
    /// version, which change stock without a movement, are gone by then.
    fn record_movements(
        &mut self,
        time: DateTime<Utc>,
        cause: &Cause,
        movements: &[NewMovement],
    ) -> RepoResult<()>;
}

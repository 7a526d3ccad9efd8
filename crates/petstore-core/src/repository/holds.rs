//! The holds' repository traits.

use chrono::{DateTime, Utc};

use super::RepoResult;
use crate::hold::{Ending, HeldTotals, Hold, PlacedHold};
use crate::ids::{HoldId, PetId};

/// Reads holds.
pub trait HoldReader {
    /// The hold with this id, active or ended. In a write, the hold is locked until the
    /// commit, after its pets (the one lock order: pets in ascending id, then holds).
    fn hold(&mut self, id: HoldId) -> RepoResult<Option<Hold>>;
    /// The pets the hold's lines name (none if there is no such hold), read without locking
    /// the hold, whose lines never change: what a change of the hold locks first.
    fn hold_pets(&mut self, id: HoldId) -> RepoResult<Vec<PetId>>;
    /// The active holds whose expiry has come at `now`, the longest due first, up to
    /// `limit`: the sweeper's candidates, read in one statement without locking them. With a
    /// `now` ahead of the clock, the holds that will be due by then.
    fn due_holds(&mut self, now: DateTime<Utc>, limit: u32) -> RepoResult<Vec<HoldId>>;
    /// How many holds are active, the units they hold, and the earliest expiry among those
    /// whose expiry has come at `now`.
    fn held_totals(&mut self, now: DateTime<Utc>) -> RepoResult<HeldTotals>;
    /// Whether holds have begun: on a database upgraded from a version without them, once the
    /// upgrade is finished (so once no node that does not count held units serves); from the
    /// start on a new one.
    fn holds_open(&mut self) -> RepoResult<bool>;
}

/// Writes holds. The store keeps each pet's held units ([`InventoryItem::held`]) as the sum of
/// its active holds' lines: placing a hold adds its lines, ending it takes them away.
///
/// [`InventoryItem::held`]: crate::InventoryItem::held
pub trait HoldWriter: HoldReader {
    /// Stores a new, active hold and gives it an id above every hold's before.
    fn insert_hold(&mut self, hold: &PlacedHold) -> RepoResult<Hold>;
    /// Ends the active hold `id` as `ending` says. A hold that is not active is a storage
    /// failure: a use case ends only a hold it read active under its lock.
    fn end_hold(&mut self, id: HoldId, ending: &Ending) -> RepoResult<()>;
}

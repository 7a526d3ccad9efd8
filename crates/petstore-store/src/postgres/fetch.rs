//! The statements a burst fetches the pets its jobs name with ([`Row`](crate::Row)): one
//! statement for the whole burst, where each job would send one of its own.

use diesel::QueryResult;
use diesel::pg::PgConnection;
use diesel::prelude::*;

use super::prepared::NextOrderId;
use crate::fetched::Fetched;
use crate::records::PetRowRecord;
use crate::schema::pets;

/// The rows of `pets` (ids, in order) for a burst of reads, in autocommit: one snapshot,
/// taken after every read of the burst was asked for.
pub(super) fn read_pets(conn: &mut PgConnection, ids: &[i64]) -> QueryResult<Fetched> {
    let found = pets::table
        .filter(pets::id.eq_any(ids))
        .select(PetRowRecord::as_select())
        .load(conn)?;
    Ok(Fetched::pets(ids, found))
}

/// The rows of `pets` (ids, in order) locked for a burst of writes, in its transaction, in id
/// order (`FOR UPDATE`, as a job's own read of its pet locks it), and an order id from the
/// sequence for each row locked, for the orders the burst holds back (`deferred.rs`). A row
/// another transaction holds is skipped rather than waited for: the job naming it locks it
/// itself, with the burst's bounded wait, as without this statement.
pub(super) fn lock_pets(conn: &mut PgConnection, ids: &[i64]) -> QueryResult<(Fetched, Vec<i64>)> {
    let found: Vec<(PetRowRecord, i64)> = pets::table
        .filter(pets::id.eq_any(ids))
        .order(pets::id)
        .select((PetRowRecord::as_select(), NextOrderId))
        .for_update()
        .skip_locked()
        .load(conn)?;
    let (rows, order_ids) = found.into_iter().unzip();
    Ok((Fetched::locked(rows), order_ids))
}

#[cfg(test)]
mod tests;

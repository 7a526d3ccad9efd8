//! The statements a burst fetches the pets its jobs name with ([`Row`](crate::Row)): one
//! statement for the whole burst, where each job would send one of its own.

use diesel::QueryResult;
use diesel::pg::PgConnection;
use diesel::prelude::*;

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
/// order (`FOR UPDATE`, as a job's own read of its pet locks it). A row another transaction
/// holds is skipped rather than waited for: the job naming it locks it itself, with the
/// burst's bounded wait, as without this statement.
pub(super) fn lock_pets(conn: &mut PgConnection, ids: &[i64]) -> QueryResult<Fetched> {
    let found = pets::table
        .filter(pets::id.eq_any(ids))
        .order(pets::id)
        .select(PetRowRecord::as_select())
        .for_update()
        .skip_locked()
        .load(conn)?;
    Ok(Fetched::locked(found))
}

#[cfg(test)]
mod tests;

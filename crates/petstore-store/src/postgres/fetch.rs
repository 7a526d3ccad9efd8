//! The statements a burst fetches the pets its jobs name with ([`Row`](crate::Row)), and
//! looks up the idempotency keys they name with ([`KeyName`](crate::KeyName)): one statement
//! for the whole burst, where each job would send one of its own.

use diesel::QueryResult;
use diesel::pg::PgConnection;
use diesel::prelude::*;
use petstore_core::IdempotencyRecord;

use super::prepared::NextOrderId;
use crate::known_rows::KnownRows;
use crate::records::{IdempotencyRow, PetRowRecord};
use crate::schema::{idempotency_records, pets};

/// The rows of `pets` (ids, in order) for a burst of reads, in autocommit: one snapshot,
/// taken after every read of the burst was asked for.
pub(super) fn read_pets(conn: &mut PgConnection, ids: &[i64]) -> QueryResult<KnownRows> {
    let found = pets::table
        .filter(pets::id.eq_any(ids))
        .select(PetRowRecord::as_select())
        .load(conn)?;
    Ok(KnownRows::read_for_all(ids, found))
}

/// The rows of `pets` (ids, in order) locked for a burst of writes, in its transaction, in id
/// order (`FOR UPDATE`, as a job's own read of its pet locks it), and an order id from the
/// sequence for each row locked, for the orders the burst holds back (`deferred.rs`). A row
/// another transaction holds is skipped rather than waited for: the job naming it locks it
/// itself, with the burst's bounded wait, as without this statement.
pub(super) fn lock_pets(
    conn: &mut PgConnection,
    ids: &[i64],
) -> QueryResult<(KnownRows, Vec<i64>)> {
    let found: Vec<(PetRowRecord, i64)> = pets::table
        .filter(pets::id.eq_any(ids))
        .order(pets::id)
        .select((PetRowRecord::as_select(), NextOrderId))
        .for_update()
        .skip_locked()
        .load(conn)?;
    let (rows, order_ids) = found.into_iter().unzip();
    Ok((KnownRows::locked(rows), order_ids))
}

/// The idempotency records of `keys` (owner, key), in a write burst's transaction, without a
/// lock: a record committed after this statement makes the burst's own record of the key
/// fail to be written when it is sent (`deferred.rs`), and the burst then runs each job
/// alone, where the create finds it. A row that is not a valid record is left out, so the
/// job that named it reads it itself and reports it as it would have.
pub(super) fn look_up_records(
    conn: &mut PgConnection,
    keys: &[(i64, String)],
) -> QueryResult<Vec<(i64, String, IdempotencyRecord)>> {
    let owners: Vec<i64> = keys.iter().map(|(owner, _)| *owner).collect();
    let texts: Vec<&str> = keys.iter().map(|(_, key)| key.as_str()).collect();
    // Owners and keys matched apart may pair a key with another owner's: those are dropped.
    let found: Vec<(i64, String, IdempotencyRow)> = idempotency_records::table
        .filter(idempotency_records::owner_id.eq_any(owners))
        .filter(idempotency_records::idempotency_key.eq_any(texts))
        .select((
            idempotency_records::owner_id,
            idempotency_records::idempotency_key,
            IdempotencyRow::as_select(),
        ))
        .load(conn)?;
    Ok(found
        .into_iter()
        .filter(|(owner, key, _)| keys.iter().any(|(o, k)| o == owner && k == key))
        .filter_map(|(owner, key, row)| Some((owner, key, IdempotencyRecord::try_from(row).ok()?)))
        .collect())
}

#[cfg(test)]
mod tests;

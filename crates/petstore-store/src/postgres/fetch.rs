//! The statements a burst fetches the pets its jobs name with ([`Row`](crate::Row)), and
//! looks up the idempotency keys they name with ([`KeyName`](crate::KeyName)): one statement
//! for the whole burst, where each job would send one or two of its own.

use diesel::QueryResult;
use diesel::pg::PgConnection;
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Bytea, Nullable, Text, Timestamptz};
use petstore_core::IdempotencyRecord;

use crate::key_records::KeyRecords;
use crate::known_rows::KnownRows;
use crate::records::{CurrencyText, IdempotencyRow, PetRecord, PetRowRecord, StatusText};
use crate::schema::pets;

/// The rows of `pets` (ids, in order) for a burst of reads, in autocommit: one snapshot,
/// taken after every read of the burst was asked for.
pub(super) fn read_pets(conn: &mut PgConnection, ids: &[i64]) -> QueryResult<KnownRows> {
    let found = pets::table
        .filter(pets::id.eq_any(ids))
        .select(PetRowRecord::as_select())
        .load(conn)?;
    Ok(KnownRows::read_for_all(ids, found))
}

/// What a burst of writes names, read in one statement of its transaction as it begins: the
/// rows of `pets` locked in id order (`FOR UPDATE`, as a job's own read of its pet locks it),
/// with an order id from the sequence for each row locked, for the orders the burst holds
/// back (`held_back.rs`); the idempotency records of `keys` (owner, key), without a lock; and,
/// on every row, whether the stock ledger has begun (a checkout of several lines asks).
///
/// A pet row another transaction holds is skipped rather than waited for: the job naming it
/// locks it itself, with the burst's bounded wait. A record committed after this statement
/// makes the burst's own record of the key fail when it is sent, and the burst then runs each
/// job alone, where the create finds it. A row that is not a valid pet or record is left
/// out, so the job that named it reads it itself and reports it as it would have.
pub(super) fn lock_and_look_up(
    conn: &mut PgConnection,
    pets: &[i64],
    keys: Vec<(i64, String)>,
) -> QueryResult<(KnownRows, KeyRecords, Vec<i64>)> {
    let (owners, texts): (Vec<i64>, Vec<String>) = keys.iter().cloned().unzip();
    let rows: Vec<NamedRow> = diesel::sql_query(LOCK_PETS_AND_LOOK_UP_KEYS)
        .bind::<Array<BigInt>, _>(pets)
        .bind::<Array<BigInt>, _>(owners)
        .bind::<Array<Text>, _>(texts)
        .load(conn)?;
    let mut locked = Vec::new();
    let mut order_ids = Vec::new();
    let mut records = Vec::new();
    let ledger_open = rows.first().map(|row| row.ledger_open);
    for row in rows {
        match row {
            NamedRow {
                id: Some(id),
                name: Some(name),
                category_id: Some(category_id),
                status: Some(status),
                price_amount,
                price_currency,
                stock: Some(stock),
                open_orders: Some(open_orders),
                committed: Some(committed),
                held: Some(held),
                order_id: Some(order_id),
                ..
            } => {
                locked.push(PetRowRecord {
                    pet: PetRecord {
                        id,
                        name,
                        category_id,
                        status,
                        price_amount,
                        price_currency,
                    },
                    stock,
                    open_orders,
                    committed,
                    held,
                });
                order_ids.push(order_id);
            }
            NamedRow {
                owner_id: Some(owner),
                idempotency_key: Some(key),
                fingerprint: Some(fingerprint),
                response: Some(response),
                recorded_at: Some(recorded_at),
                ..
            } => {
                let row = IdempotencyRow {
                    fingerprint,
                    response,
                    recorded_at,
                };
                // Owners and keys matched apart may pair a key with another owner's.
                if keys.iter().any(|(o, k)| *o == owner && *k == key)
                    && let Ok(record) = IdempotencyRecord::try_from(row)
                {
                    records.push((owner, key, record));
                }
            }
            _ => {}
        }
    }
    Ok((
        KnownRows::locked(locked, ledger_open),
        KeyRecords::looked_up(keys, records),
        order_ids,
    ))
}

/// [`lock_and_look_up`]'s statement: the pets locked and the records found, as rows of one
/// shape, each kind with the other's columns `NULL`.
const LOCK_PETS_AND_LOOK_UP_KEYS: &str = "\
    WITH locked AS (SELECT id, name, category_id, status, price_amount, price_currency, \
    stock, open_orders, committed, held, nextval('orders_id_seq') AS order_id FROM pets \
    WHERE id = ANY($1) ORDER BY id FOR UPDATE SKIP LOCKED), \
    ledger AS (SELECT EXISTS (SELECT 1 FROM ledger_opened) AS ledger_open) \
    SELECT id, name, category_id, status, price_amount, price_currency, stock, open_orders, \
    committed, held, order_id, \
    NULL::bigint AS owner_id, NULL::text AS idempotency_key, NULL::bytea AS fingerprint, \
    NULL::bytea AS response, NULL::timestamptz AS recorded_at, ledger_open \
    FROM locked, ledger \
    UNION ALL SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, owner_id, \
    idempotency_key, fingerprint, response, recorded_at, ledger_open \
    FROM idempotency_records, ledger \
    WHERE owner_id = ANY($2) AND idempotency_key = ANY($3)";

/// A row of [`LOCK_PETS_AND_LOOK_UP_KEYS`]: a locked pet, or a record found.
#[derive(QueryableByName)]
struct NamedRow {
    #[diesel(sql_type = Nullable<BigInt>)]
    id: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    name: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    category_id: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    status: Option<StatusText>,
    #[diesel(sql_type = Nullable<BigInt>)]
    price_amount: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    price_currency: Option<CurrencyText>,
    #[diesel(sql_type = Nullable<BigInt>)]
    stock: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    open_orders: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    committed: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    held: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    order_id: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    owner_id: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    idempotency_key: Option<String>,
    #[diesel(sql_type = Nullable<Bytea>)]
    fingerprint: Option<Vec<u8>>,
    #[diesel(sql_type = Nullable<Bytea>)]
    response: Option<Vec<u8>>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    recorded_at: Option<chrono::DateTime<chrono::Utc>>,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    ledger_open: bool,
}

#[cfg(test)]
mod tests;

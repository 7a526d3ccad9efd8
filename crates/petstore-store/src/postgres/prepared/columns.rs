//! The columns [`SendHeldBack`](super::SendHeldBack) binds, each an array of one value per
//! row, so that one statement text serves any number of records, lines and movements.

use diesel::QueryResult;
use diesel::pg::Pg;
use diesel::query_builder::AstPass;
use diesel::sql_types::{Array, BigInt, Bytea, Nullable, Text, Timestamptz};
use petstore_core::{IdempotencyRecord, PricedLine};

use crate::records::MovementColumns;

/// Idempotency records, each column an array, as [`SendHeldBack`](super::SendHeldBack) binds them.
#[derive(Debug, Default)]
pub(crate) struct RecordColumns {
    pub(crate) owners: Vec<i64>,
    pub(crate) keys: Vec<String>,
    pub(crate) fingerprints: Vec<Vec<u8>>,
    pub(crate) responses: Vec<Vec<u8>>,
    pub(crate) times: Vec<chrono::DateTime<chrono::Utc>>,
}

impl RecordColumns {
    /// Adds `owner`'s record of key `key`.
    pub(crate) fn push(&mut self, owner: i64, key: String, record: IdempotencyRecord) {
        let IdempotencyRecord {
            fingerprint,
            response,
            recorded_at,
        } = record;
        self.owners.push(owner);
        self.keys.push(key);
        self.fingerprints.push(fingerprint.to_vec());
        self.responses.push(response);
        self.times.push(recorded_at);
    }

    /// `INSERT INTO idempotency_records … SELECT * FROM unnest(…)` of these records.
    pub(super) fn walk<'b>(&'b self, out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql(
            "INSERT INTO idempotency_records (owner_id, idempotency_key, fingerprint, response, \
             recorded_at) SELECT * FROM unnest(",
        );
        out.push_bind_param::<Array<BigInt>, _>(&self.owners)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Text>, _>(&self.keys)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Bytea>, _>(&self.fingerprints)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Bytea>, _>(&self.responses)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Timestamptz>, _>(&self.times)?;
        out.push_sql(")");
        Ok(())
    }
}

/// Orders' lines after their first, each column an array, as [`SendHeldBack`](super::SendHeldBack) binds them.
#[derive(Debug, Default)]
pub(crate) struct LineArrays {
    order_ids: Vec<i64>,
    line_nos: Vec<i64>,
    pet_ids: Vec<i64>,
    quantities: Vec<i64>,
    unit_amounts: Vec<Option<i64>>,
    currencies: Vec<Option<&'static str>>,
}

impl LineArrays {
    /// Adds order `order_id`'s `lines`, numbered from 2.
    pub(crate) fn extend(&mut self, order_id: i64, lines: &[PricedLine]) {
        for (line, line_no) in lines.iter().zip(2i64..) {
            self.order_ids.push(order_id);
            self.line_nos.push(line_no);
            self.pet_ids.push(line.pet_id.get());
            self.quantities.push(i64::from(line.quantity.get()));
            self.unit_amounts.push(line.price.map(|p| p.amount.get()));
            self.currencies.push(line.price.map(|p| p.currency.code()));
        }
    }

    /// `INSERT INTO order_lines … SELECT * FROM unnest(…)` of these lines. Their orders are
    /// inserted by the same statement: the foreign key is checked at its end.
    pub(super) fn walk<'b>(&'b self, out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql(
            "INSERT INTO order_lines (order_id, line_no, pet_id, quantity, unit_amount, \
             currency) SELECT * FROM unnest(",
        );
        for column in [
            &self.order_ids,
            &self.line_nos,
            &self.pet_ids,
            &self.quantities,
        ] {
            out.push_bind_param::<Array<BigInt>, _>(column)?;
            out.push_sql(", ");
        }
        out.push_bind_param::<Array<Nullable<BigInt>>, _>(&self.unit_amounts)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Nullable<Text>>, _>(&self.currencies)?;
        out.push_sql(")");
        Ok(())
    }
}

/// Stock movements, each column an array, as [`SendHeldBack`](super::SendHeldBack) binds them.
#[derive(Debug, Default)]
pub(crate) struct MovementArrays {
    pet_ids: Vec<i64>,
    kinds: Vec<&'static str>,
    quantities: Vec<i64>,
    available_changes: Vec<i64>,
    committed_changes: Vec<i64>,
    available_afters: Vec<i64>,
    committed_afters: Vec<i64>,
    order_ids: Vec<Option<i64>>,
    line_nos: Vec<Option<i64>>,
    reasons: Vec<Option<String>>,
    actors: Vec<Option<String>>,
    request_ids: Vec<Option<String>>,
    times: Vec<chrono::DateTime<chrono::Utc>>,
    held_changes: Vec<i64>,
    held_afters: Vec<i64>,
    hold_ids: Vec<Option<i64>>,
}

impl MovementArrays {
    /// Whether it holds no movement.
    pub(super) fn is_empty(&self) -> bool {
        self.pet_ids.is_empty()
    }

    /// Adds `rows`, recorded at `time`.
    pub(crate) fn extend(
        &mut self,
        time: chrono::DateTime<chrono::Utc>,
        rows: Vec<MovementColumns>,
    ) {
        for row in rows {
            // Destructured: a column added to movements is a compile error here until it is sent.
            let MovementColumns {
                pet_id,
                kind,
                quantity,
                available_change,
                committed_change,
                available_after,
                committed_after,
                order_id,
                line_no,
                reason,
                actor,
                request_id,
                held_change,
                held_after,
                hold_id,
            } = row;
            self.pet_ids.push(pet_id);
            self.kinds.push(kind);
            self.quantities.push(quantity);
            self.available_changes.push(available_change);
            self.committed_changes.push(committed_change);
            self.available_afters.push(available_after);
            self.committed_afters.push(committed_after);
            self.order_ids.push(order_id);
            self.line_nos.push(line_no);
            self.reasons.push(reason);
            self.actors.push(actor);
            self.request_ids.push(request_id);
            self.times.push(time);
            self.held_changes.push(held_change);
            self.held_afters.push(held_after);
            self.hold_ids.push(hold_id);
        }
    }

    /// `INSERT INTO stock_movements … SELECT … FROM unnest(…)` of these movements, in the
    /// order they were recorded, each only if the ledger has begun.
    pub(super) fn walk<'b>(&'b self, out: &mut AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql(
            "INSERT INTO stock_movements (pet_id, kind, quantity, available_change, \
             committed_change, available_after, committed_after, order_id, line_no, reason, \
             actor, request_id, time, held_change, held_after, hold_id) SELECT m.pet_id, \
             m.kind, m.quantity, m.available_change, m.committed_change, m.available_after, \
             m.committed_after, m.order_id, m.line_no, m.reason, m.actor, m.request_id, m.time, \
             m.held_change, m.held_after, m.hold_id FROM unnest(",
        );
        out.push_bind_param::<Array<BigInt>, _>(&self.pet_ids)?;
        out.push_sql(", ");
        out.push_bind_param::<Array<Text>, _>(&self.kinds)?;
        for column in [
            &self.quantities,
            &self.available_changes,
            &self.committed_changes,
            &self.available_afters,
            &self.committed_afters,
        ] {
            out.push_sql(", ");
            out.push_bind_param::<Array<BigInt>, _>(column)?;
        }
        for column in [&self.order_ids, &self.line_nos] {
            out.push_sql(", ");
            out.push_bind_param::<Array<Nullable<BigInt>>, _>(column)?;
        }
        for column in [&self.reasons, &self.actors, &self.request_ids] {
            out.push_sql(", ");
            out.push_bind_param::<Array<Nullable<Text>>, _>(column)?;
        }
        out.push_sql(", ");
        out.push_bind_param::<Array<Timestamptz>, _>(&self.times)?;
        for column in [&self.held_changes, &self.held_afters] {
            out.push_sql(", ");
            out.push_bind_param::<Array<BigInt>, _>(column)?;
        }
        out.push_sql(", ");
        out.push_bind_param::<Array<Nullable<BigInt>>, _>(&self.hold_ids)?;
        out.push_sql(
            ") WITH ORDINALITY AS m(pet_id, kind, quantity, available_change, committed_change, \
             available_after, committed_after, order_id, line_no, reason, actor, request_id, \
             time, held_change, held_after, hold_id, place) \
             WHERE EXISTS (SELECT 1 FROM ledger_opened) ORDER BY m.place",
        );
        Ok(())
    }
}

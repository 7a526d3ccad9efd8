//! Holds, in `holds` and `hold_lines`. Each pet's held units are a column of its row, kept by
//! the tables' triggers: a line placed adds its units, a hold ended takes its lines' away.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use petstore_core::{
    DomainError, Ending, HeldTotals, Hold, HoldId, HoldReader, HoldWriter, PetId, PlacedHold,
    RepoResult,
};

use super::{Tx, row_for_update};
use crate::error::{QueryResultExt, Rule, StoreError, Violation};
use crate::records::{HoldLineRecord, HoldRecord};
use crate::schema::sql_types::Time;
use crate::schema::{hold_lines, holds, holds_opened};
use crate::statements::{exactly_one, refuse};

impl HoldReader for Tx<'_> {
    fn hold(&mut self, id: HoldId) -> RepoResult<Option<Hold>> {
        if self.locks_rows() {
            // In a write the hold's row is locked until the commit (after its pets, which
            // the use case locked first): two changes ending it take turns, and the second
            // finds it ended. Its lines never change.
            let row = row_for_update!(
                self,
                holds::table.find(id.get()).select(HoldRecord::as_select())
            )
            .or_storage()?;
            let Some(row) = row else { return Ok(None) };
            return Ok(self.holds_with_lines(vec![row])?.pop());
        }
        // One statement, so that a point read sees the hold and its lines at one moment.
        let rows: Vec<(HoldRecord, HoldLineRecord)> = holds::table
            .inner_join(hold_lines::table)
            .filter(holds::id.eq(id.get()))
            .order(hold_lines::line_no.asc())
            .select((HoldRecord::as_select(), HoldLineRecord::as_select()))
            .load(self.flushed())
            .or_storage()?;
        let mut hold = None;
        let mut lines = Vec::new();
        for (row, line) in rows {
            hold.get_or_insert(row);
            lines.push(line);
        }
        hold.map(|row| row.with_lines(lines).map_err(DomainError::from))
            .transpose()
    }

    fn hold_pets(&mut self, id: HoldId) -> RepoResult<Vec<PetId>> {
        let pets: Vec<i64> = hold_lines::table
            .filter(hold_lines::hold_id.eq(id.get()))
            .order(hold_lines::line_no.asc())
            .select(hold_lines::pet_id)
            .load(self.flushed())
            .or_storage()?;
        pets.into_iter()
            .map(|pet| PetId::new(pet).map_err(|e| StoreError::Corrupt(e.to_string()).into()))
            .collect()
    }

    fn due_holds(&mut self, now: DateTime<Utc>, limit: u32) -> RepoResult<Vec<HoldId>> {
        let sql = holds::table
            .filter(holds::ended.is_null())
            .filter(holds::expires_at.le(Time(now)))
            .order((holds::expires_at.asc(), holds::id.asc()))
            .select(holds::id)
            .into_boxed();
        let ids: Vec<i64> = self.page(sql, i64::from(limit)).or_storage()?;
        ids.into_iter()
            .map(|id| HoldId::new(id).map_err(|e| StoreError::Corrupt(e.to_string()).into()))
            .collect()
    }

    fn held_totals(&mut self, now: DateTime<Utc>) -> RepoResult<HeldTotals> {
        use diesel::dsl::sql;
        use diesel::sql_types::BigInt;
        // One statement, alike on both backends (PostgreSQL's sum of bigints is numeric).
        let (holds, units): (i64, i64) = hold_lines::table
            .inner_join(holds::table)
            .filter(holds::ended.is_null())
            .select((
                sql::<BigInt>("count(DISTINCT hold_lines.hold_id)"),
                sql::<BigInt>("CAST(coalesce(sum(hold_lines.quantity), 0) AS BIGINT)"),
            ))
            .get_result(self.flushed())
            .or_storage()?;
        let due = holds::table
            .filter(holds::ended.is_null())
            .filter(holds::expires_at.le(Time(now)))
            .order(holds::expires_at.asc())
            .select(holds::expires_at)
            .into_boxed();
        let oldest_due = self.page(due, 1).or_storage()?.into_iter().next();
        Ok(HeldTotals {
            holds: holds.unsigned_abs(),
            units: units.unsigned_abs(),
            oldest_due,
        })
    }

    fn holds_open(&mut self) -> RepoResult<bool> {
        diesel::select(diesel::dsl::exists(
            holds_opened::table.select(holds_opened::id),
        ))
        .get_result(self.flushed())
        .or_storage()
    }
}

impl Tx<'_> {
    /// The holds of `rows`, each with its lines, read in one statement.
    fn holds_with_lines(&mut self, rows: Vec<HoldRecord>) -> RepoResult<Vec<Hold>> {
        let ids: Vec<i64> = rows.iter().map(|row| row.id).collect();
        let found: Vec<HoldLineRecord> = hold_lines::table
            .filter(hold_lines::hold_id.eq_any(ids))
            .order((hold_lines::hold_id, hold_lines::line_no))
            .select(HoldLineRecord::as_select())
            .load(self.flushed())
            .or_storage()?;
        let mut lines: HashMap<i64, Vec<HoldLineRecord>> = HashMap::new();
        for line in found {
            lines.entry(line.hold_id).or_default().push(line);
        }
        rows.into_iter()
            .map(|row| {
                let mine = lines.remove(&row.id).unwrap_or_default();
                row.with_lines(mine).map_err(DomainError::from)
            })
            .collect()
    }
}

impl HoldWriter for Tx<'_> {
    fn insert_hold(&mut self, hold: &PlacedHold) -> RepoResult<Hold> {
        // The trigger on hold_lines changes the row of every line's pet.
        for line in &hold.lines {
            self.forget_pet_row(Some(line.pet_id));
        }
        let id: i64 = diesel::insert_into(holds::table)
            .values((
                holds::owner_id.eq(hold.owner.map(|owner| owner.get())),
                holds::created_at.eq(Time(hold.created_at)),
                holds::expires_at.eq(Time(hold.expires_at)),
            ))
            .returning(holds::id)
            .get_result(self.flushed())
            .or_storage()?;
        for line in &hold.lines {
            diesel::insert_into(hold_lines::table)
                .values((
                    hold_lines::hold_id.eq(id),
                    hold_lines::line_no.eq(i64::from(line.line_no)),
                    hold_lines::pet_id.eq(line.pet_id.get()),
                    hold_lines::quantity.eq(i64::from(line.quantity.get())),
                ))
                .execute(self.flushed())
                .map_err(|e| {
                    refuse(e, |v| {
                        (v == Violation::Rule(Rule::UnknownPet)).then_some(DomainError::storage(
                            "a hold line's pet was gone under its lock",
                        ))
                    })
                })?;
        }
        let id = HoldId::new(id).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        Ok(hold.clone().into_hold(id))
    }

    fn end_hold(&mut self, id: HoldId, ending: &Ending) -> RepoResult<()> {
        // The trigger on holds changes the row of every line's pet.
        self.forget_pet_row(None);
        // An ended hold is never ended again (`plant-hold-guard-off` leaves that out, for the
        // soak's negative controls only).
        let unguarded = cfg!(feature = "plant-hold-guard-off");
        let affected = diesel::update(
            holds::table.find(id.get()).filter(
                holds::ended
                    .is_null()
                    .or(unguarded.into_sql::<diesel::sql_types::Bool>()),
            ),
        )
        .set((
            holds::ended.eq(ending.how.as_str()),
            holds::ended_at.eq(Time(ending.at)),
            holds::order_id.eq(ending.order_id.map(|order| order.get())),
        ))
        .execute(self.flushed())
        .or_storage()?;
        exactly_one(affected, "active hold", id.get())
    }
}

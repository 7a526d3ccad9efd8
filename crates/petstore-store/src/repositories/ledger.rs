//! The stock ledger, in `stock_movements`: read here, written by each backend its own way
//! (`Tx::insert_movement_rows`), only once `ledger_opened` has its row.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use petstore_core::{
    Cause, LedgerReader, LedgerWriter, Movement, MovementQuery, NewMovement, RepoResult,
};

use super::Tx;
use crate::error::QueryResultExt;
use crate::records::{MovementColumns, MovementRecord};
use crate::schema::{ledger_opened, stock_movements};
use crate::statements::{convert, probe};

impl LedgerReader for Tx<'_> {
    fn movements(&mut self, query: &MovementQuery) -> RepoResult<Vec<Movement>> {
        let mut sql = stock_movements::table
            .select(MovementRecord::as_select())
            .filter(stock_movements::pet_id.eq(query.pet_id.get()))
            .order(stock_movements::id.asc())
            .into_boxed();
        if let Some(after) = query.after {
            sql = sql.filter(stock_movements::id.gt(after.get()));
        }
        convert(self.page(sql, probe(query.limit)).or_storage()?)
    }

    fn ledger_open(&mut self) -> RepoResult<bool> {
        if let Some(open) = self.known().ledger_open() {
            return Ok(open);
        }
        diesel::select(diesel::dsl::exists(
            ledger_opened::table.select(ledger_opened::id),
        ))
        .get_result(self.flushed())
        .or_storage()
    }
}

impl LedgerWriter for Tx<'_> {
    fn record_movements(
        &mut self,
        time: DateTime<Utc>,
        cause: &Cause,
        movements: &[NewMovement],
    ) -> RepoResult<()> {
        if movements.is_empty() {
            return Ok(());
        }
        let rows = MovementColumns::of(cause, movements)?;
        self.insert_movement_rows(time, rows)
    }
}

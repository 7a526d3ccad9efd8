//! A write's events and stock movements, each in one `INSERT` of as many rows, kept per
//! number of rows (`by_count.rs`).
//!
//! Every value a write's rows share (its time, its cause's trace, actor and request id) is
//! bound once, in the first row: the rows after it name the first row's parameters by number
//! (`?1`), so a checkout binds them once where it bound them once a row, at about 800
//! instructions a parameter.

use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::sql_types::{BigInt, Nullable, Text};
use diesel::sqlite::{Sqlite, SqliteConnection};
use diesel::{QueryResult, RunQueryDsl};

use super::by_count::RowsStatement;
use crate::records::{EventColumns, MovementColumns};
use crate::schema::sql_types::{JsonValue, Time, UtcTime};

/// The events of one write, in one `INSERT` of as many rows. Its text depends only on the
/// number of rows, and one prepared statement is kept per number (`by_count.rs`): a
/// checkout's six events are one statement, where one each cost a statement's binding,
/// stepping and resetting, and `AUTOINCREMENT`'s read and write of `sqlite_sequence`, six
/// times.
#[derive(Debug)]
pub(crate) struct AppendEvents<'a> {
    pub(crate) time: Time,
    pub(crate) trace: Option<&'a str>,
    pub(crate) actor: Option<&'a str>,
    pub(crate) rows: Vec<EventColumns>,
}

/// Kept by its text, which the number of rows decides, where [`execute_rows`] cannot key it
/// by that number.
impl QueryId for AppendEvents<'_> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl QueryFragment<Sqlite> for AppendEvents<'_> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Sqlite>) -> QueryResult<()> {
        out.push_sql(
            "INSERT OR FAIL INTO `events` (`time`, `type`, `subject`, `data`, `traceparent`, `actor`) \
             VALUES ",
        );
        for (at, row) in self.rows.iter().enumerate() {
            // The first row's parameters: 1 the time, 5 the trace, 6 the actor.
            if at == 0 {
                out.push_sql("(");
                out.push_bind_param::<UtcTime, _>(&self.time)?;
            } else {
                out.push_sql(", (?1");
            }
            out.push_sql(", ");
            out.push_bind_param::<Text, _>(row.event_type)?;
            out.push_sql(", ");
            out.push_bind_param::<Text, _>(&row.subject)?;
            out.push_sql(", ");
            out.push_bind_param::<JsonValue, _>(&row.data)?;
            if at == 0 {
                out.push_sql(", ");
                out.push_bind_param::<Nullable<Text>, _>(&self.trace)?;
                out.push_sql(", ");
                out.push_bind_param::<Nullable<Text>, _>(&self.actor)?;
                out.push_sql(")");
            } else {
                out.push_sql(", ?5, ?6)");
            }
        }
        Ok(())
    }
}

impl RunQueryDsl<SqliteConnection> for AppendEvents<'_> {}

impl RowsStatement for AppendEvents<'_> {
    type Static = AppendEvents<'static>;

    fn rows(&self) -> usize {
        self.rows.len()
    }
}

/// A write's stock movements, in one `INSERT` of as many rows, kept per number of rows as
/// [`AppendEvents`] is: a checkout's lines are one statement. Its rows have one actor and
/// one request id, the write's cause's (`MovementColumns::of`), written as the first row's.
#[derive(Debug)]
pub(crate) struct RecordMovements {
    pub(crate) time: Time,
    pub(crate) rows: Vec<MovementColumns>,
}

/// Kept by its text, as [`AppendEvents`] is.
impl QueryId for RecordMovements {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl QueryFragment<Sqlite> for RecordMovements {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Sqlite>) -> QueryResult<()> {
        debug_assert!(
            self.rows.windows(2).all(|pair| {
                (&pair[0].actor, &pair[0].request_id) == (&pair[1].actor, &pair[1].request_id)
            }),
            "one write's movements have one cause"
        );
        out.push_sql(
            "INSERT OR FAIL INTO `stock_movements` (`pet_id`, `kind`, `quantity`, `available_change`, \
             `committed_change`, `available_after`, `committed_after`, `order_id`, `line_no`, \
             `reason`, `actor`, `request_id`, `time`, `held_change`, `held_after`, `hold_id`) \
             VALUES ",
        );
        for (at, row) in self.rows.iter().enumerate() {
            out.push_sql(if at == 0 { "(" } else { ", (" });
            out.push_bind_param::<BigInt, _>(&row.pet_id)?;
            out.push_sql(", ");
            out.push_bind_param::<Text, _>(row.kind)?;
            for number in [
                &row.quantity,
                &row.available_change,
                &row.committed_change,
                &row.available_after,
                &row.committed_after,
            ] {
                out.push_sql(", ");
                out.push_bind_param::<BigInt, _>(number)?;
            }
            for number in [&row.order_id, &row.line_no] {
                out.push_sql(", ");
                out.push_bind_param::<Nullable<BigInt>, _>(number)?;
            }
            out.push_sql(", ");
            out.push_bind_param::<Nullable<Text>, _>(&row.reason)?;
            // The first row's parameters: 11 the actor, 12 the request id, 13 the time.
            if at == 0 {
                for text in [&row.actor, &row.request_id] {
                    out.push_sql(", ");
                    out.push_bind_param::<Nullable<Text>, _>(text)?;
                }
                out.push_sql(", ");
                out.push_bind_param::<UtcTime, _>(&self.time)?;
            } else {
                out.push_sql(", ?11, ?12, ?13");
            }
            for number in [&row.held_change, &row.held_after] {
                out.push_sql(", ");
                out.push_bind_param::<BigInt, _>(number)?;
            }
            out.push_sql(", ");
            out.push_bind_param::<Nullable<BigInt>, _>(&row.hold_id)?;
            out.push_sql(")");
        }
        Ok(())
    }
}

impl RunQueryDsl<SqliteConnection> for RecordMovements {}

impl RowsStatement for RecordMovements {
    type Static = RecordMovements;

    fn rows(&self) -> usize {
        self.rows.len()
    }
}

//! Lines 2 and on of an order, in one `INSERT` of as many rows.

use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::sql_types::{BigInt, Nullable, Text};
use diesel::sqlite::{Sqlite, SqliteConnection};
use diesel::{QueryResult, RunQueryDsl};

use super::by_count::RowsStatement;

/// The lines after an order's first, one statement for all of them, kept per number of rows
/// (`by_count.rs`), where a statement each cost a line its binding, stepping and resetting.
/// Its foreign key to `orders` makes SQLite keep a statement journal for it (a violation is
/// counted until the statement ends), which costs less than the statements it replaces.
#[derive(Debug)]
pub(crate) struct InsertLines {
    pub(crate) order_id: i64,
    pub(crate) rows: Vec<LineColumns>,
}

/// One line's columns.
#[derive(Debug)]
pub(crate) struct LineColumns {
    pub(crate) line_no: i64,
    pub(crate) pet_id: i64,
    pub(crate) quantity: i64,
    pub(crate) unit_amount: Option<i64>,
    pub(crate) currency: Option<&'static str>,
}

/// Kept by its text where [`by_count`](super::by_count) cannot key it by its number of rows.
impl QueryId for InsertLines {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl QueryFragment<Sqlite> for InsertLines {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Sqlite>) -> QueryResult<()> {
        out.push_sql(
            "INSERT OR FAIL INTO `order_lines` (`order_id`, `line_no`, `pet_id`, `quantity`, \
             `unit_amount`, `currency`) VALUES ",
        );
        for (at, row) in self.rows.iter().enumerate() {
            // The order's id is bound once, the first row's parameter 1 (as `appends.rs`
            // binds a write's shared values).
            if at == 0 {
                out.push_sql("(");
                out.push_bind_param::<BigInt, _>(&self.order_id)?;
            } else {
                out.push_sql(", (?1");
            }
            for number in [&row.line_no, &row.pet_id, &row.quantity] {
                out.push_sql(", ");
                out.push_bind_param::<BigInt, _>(number)?;
            }
            out.push_sql(", ");
            out.push_bind_param::<Nullable<BigInt>, _>(&row.unit_amount)?;
            out.push_sql(", ");
            out.push_bind_param::<Nullable<Text>, _>(&row.currency)?;
            out.push_sql(")");
        }
        Ok(())
    }
}

impl RunQueryDsl<SqliteConnection> for InsertLines {}

impl RowsStatement for InsertLines {
    type Static = InsertLines;

    fn rows(&self) -> usize {
        self.rows.len()
    }
}

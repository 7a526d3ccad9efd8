//! Statements whose text their number of rows decides ([`AppendEvents`](super::AppendEvents),
//! [`RecordMovements`](super::RecordMovements), [`InsertLines`](super::InsertLines)), each
//! prepared once per number of rows under a query id of that number.
//!
//! Diesel keeps a statement whose query id is not static by its text, and so writes the text
//! out again on every execution to look it up: keyed by number instead, a five-line checkout
//! took about 13,000 fewer instructions (`bench/profile`). A query id made of the statement's
//! type and its number of rows is known without the text.

use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::sqlite::{Sqlite, SqliteConnection};
use diesel::{QueryResult, RunQueryDsl};

/// A statement of as many rows as it says, whose text only that number decides.
pub(crate) trait RowsStatement: QueryFragment<Sqlite> + QueryId {
    /// The statement's type with every borrow `'static`: part of its query id.
    type Static: 'static;
    /// How many rows it writes.
    fn rows(&self) -> usize;
}

/// `Q` of `ROWS` rows, under a query id of its own.
struct Counted<const ROWS: usize, Q>(Q);

impl<const ROWS: usize, Q: RowsStatement> QueryId for Counted<ROWS, Q> {
    type QueryId = Counted<ROWS, Q::Static>;
    const HAS_STATIC_QUERY_ID: bool = true;
}

impl<const ROWS: usize, Q: RowsStatement> QueryFragment<Sqlite> for Counted<ROWS, Q> {
    fn walk_ast<'b>(&'b self, pass: AstPass<'_, 'b, Sqlite>) -> QueryResult<()> {
        self.0.walk_ast(pass)
    }
}

impl<const ROWS: usize, Q> RunQueryDsl<SqliteConnection> for Counted<ROWS, Q> {}

/// Executes `statement`, under a query id of its number of rows up to 16 (a checkout of up
/// to 15 lines); a larger one is kept by its text.
pub(crate) fn execute<Q>(statement: Q, conn: &mut SqliteConnection) -> QueryResult<usize>
where
    Q: RowsStatement + RunQueryDsl<SqliteConnection>,
{
    macro_rules! by_count {
        ($($rows:literal)*) => {
            match statement.rows() {
                $($rows => Counted::<$rows, Q>(statement).execute(conn),)*
                _ => statement.execute(conn),
            }
        };
    }
    by_count!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
}

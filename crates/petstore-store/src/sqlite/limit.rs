//! `LIMIT n` written into a statement's SQL rather than bound as a parameter.
//!
//! SQLite's planner looks at the value bound to a `LIMIT ?`, and so marks the statement to be
//! planned again whenever that parameter is bound anew: every execution of a statement Diesel
//! had cached (`.limit(n)`, `.first()`) was parsed and planned from scratch, about a third of
//! the instructions of a point read (docs/performance.md). With the limit in the text, the
//! cached plan is reused; each distinct limit is one more cached statement, and page sizes
//! are bounded (1 to 100, plus the probe row).

use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::sqlite::Sqlite;
use diesel::{QueryResult, RunQueryDsl};

/// `query` with `LIMIT limit` appended. `query` must end where a `LIMIT` may follow (after its
/// `ORDER BY`) and have no limit of its own.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limited<Q> {
    query: Q,
    limit: i64,
}

/// Appends `LIMIT limit` to `query`, as text.
pub(crate) fn limited<Q>(query: Q, limit: i64) -> Limited<Q> {
    Limited { query, limit }
}

impl<Q: QueryFragment<Sqlite>> QueryFragment<Sqlite> for Limited<Q> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Sqlite>) -> QueryResult<()> {
        self.query.walk_ast(out.reborrow())?;
        out.push_sql(" LIMIT ");
        out.push_sql(&self.limit.to_string());
        Ok(())
    }
}

// No static id: Diesel then caches the prepared statement by its SQL text, which holds the
// limit, so two limits never share a statement.
impl<Q> QueryId for Limited<Q> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Q: Query> Query for Limited<Q> {
    type SqlType = Q::SqlType;
}

impl<Q, Conn> RunQueryDsl<Conn> for Limited<Q> {}

//! `LIMIT n` written into a statement's SQL rather than bound as a parameter.
//!
//! SQLite's planner looks at the value bound to a `LIMIT ?`, and so marks the statement to be
//! planned again whenever that parameter is bound anew: every execution of a statement Diesel
//! had cached (`.limit(n)`, `.first()`) was parsed and planned from scratch, about a third of
//! the instructions of a point read (docs/performance.md). With the limit in the text, the
//! cached plan is reused; each distinct limit is one more cached statement, and page sizes
//! are bounded (1 to 100, plus the probe row).
//!
//! Diesel finds a cached statement by its query's type when the type fixes the SQL, and
//! otherwise by the SQL text, which it writes out again for every execution (for a page of
//! pets, about 6% of the request: each identifier quoted and escaped anew). A limit held as a
//! value leaves the text unfixed, so the usual page, of the default size, runs as a query
//! whose type carries its limit ([`DefaultPage`]); other sizes are found by their text.

use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::query_dsl::LoadQuery;
use diesel::sqlite::{Sqlite, SqliteConnection};
use diesel::{QueryResult, RunQueryDsl};
use petstore_core::PageSize;

use crate::statements::probe;

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

/// The rows a default page reads: the page and its probe row.
const DEFAULT_PAGE_ROWS: &str = "21";

impl<Q> Limited<Q> {
    /// Runs the query: as a [`DefaultPage`] when its limit is the default page's, so that a
    /// query of fixed shape finds its statement without its SQL being written again.
    ///
    /// This shadows `RunQueryDsl::load` on purpose: every limited query goes through it.
    pub(crate) fn load<'q, U>(self, conn: &mut SqliteConnection) -> QueryResult<Vec<U>>
    where
        Self: LoadQuery<'q, SqliteConnection, U>,
        DefaultPage<Q>: LoadQuery<'q, SqliteConnection, U>,
    {
        if self.limit == probe(PageSize::DEFAULT) {
            RunQueryDsl::load(DefaultPage(self.query), conn)
        } else {
            RunQueryDsl::load(self, conn)
        }
    }
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

/// `query` with the default page's limit, [`DEFAULT_PAGE_ROWS`]: the limit is part of the
/// type, so a query of fixed shape keeps a static id and Diesel finds its statement by type.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DefaultPage<Q>(Q);

impl<Q: QueryFragment<Sqlite>> QueryFragment<Sqlite> for DefaultPage<Q> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Sqlite>) -> QueryResult<()> {
        self.0.walk_ast(out.reborrow())?;
        out.push_sql(" LIMIT ");
        out.push_sql(DEFAULT_PAGE_ROWS);
        Ok(())
    }
}

// Static exactly when the query's own id is: a boxed query still goes by its text.
impl<Q: QueryId> QueryId for DefaultPage<Q> {
    type QueryId = DefaultPage<Q::QueryId>;
    const HAS_STATIC_QUERY_ID: bool = Q::HAS_STATIC_QUERY_ID;
}

// Only a query of fixed shape gets a static id; a boxed one, or any other limit, is found by
// its text.
const _: () = {
    use crate::schema::pets;
    assert!(<DefaultPage<pets::table> as QueryId>::HAS_STATIC_QUERY_ID);
    assert!(!<DefaultPage<pets::BoxedQuery<'static, Sqlite>> as QueryId>::HAS_STATIC_QUERY_ID);
    assert!(!<Limited<pets::table> as QueryId>::HAS_STATIC_QUERY_ID);
};

impl<Q: Query> Query for DefaultPage<Q> {
    type SqlType = Q::SqlType;
}

impl<Q, Conn> RunQueryDsl<Conn> for DefaultPage<Q> {}

#[cfg(test)]
mod tests {
    use super::*;
    use diesel::debug_query;
    use diesel::prelude::*;

    use crate::schema::pets;

    #[test]
    fn the_default_page_limit_is_the_default_page_and_its_probe_row() {
        assert_eq!(DEFAULT_PAGE_ROWS, probe(PageSize::DEFAULT).to_string());
    }

    #[test]
    fn both_forms_write_the_limit_into_the_text() {
        let query = || pets::table.select(pets::id).order(pets::id.asc());
        let default = debug_query::<Sqlite, _>(&DefaultPage(query())).to_string();
        let other = debug_query::<Sqlite, _>(&limited(query(), 7)).to_string();
        assert!(
            default.contains("ORDER BY `pets`.`id` ASC LIMIT 21"),
            "{default}"
        );
        assert!(
            other.contains("ORDER BY `pets`.`id` ASC LIMIT 7"),
            "{other}"
        );
    }
}

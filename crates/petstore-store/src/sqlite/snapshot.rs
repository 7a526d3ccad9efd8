//! The read transaction on a reader connection, with `BEGIN` and `COMMIT` prepared once.
//!
//! Diesel's transaction manager sends `BEGIN` and `COMMIT` through `sqlite3_exec`, which parses
//! and plans them anew each time: about a third of what a point read cost in SQLite and Diesel
//! (docs/performance.md). Here they are prepared statements Diesel keeps (`prepared.rs`).
//!
//! Diesel's manager does not know about these transactions; nothing on a reader connection
//! asks it for one. A connection is never handed on with a transaction open: if `COMMIT` and
//! then `ROLLBACK` both fail, the next `BEGIN` on it fails, and the read rolls the leftover
//! transaction back and begins again, so no read ever runs on an old snapshot.

use diesel::RunQueryDsl;
use diesel::r2d2::{ConnectionManager, PooledConnection};
use diesel::sqlite::SqliteConnection;

use super::prepared::{Begin, Commit, Rollback};

/// A reader connection lent by the pool.
pub(crate) type Lent = PooledConnection<ConnectionManager<SqliteConnection>>;

/// Begins a deferred transaction on `conn`; a transaction left open by an earlier failure
/// is rolled back first.
pub(crate) fn begin(conn: &mut SqliteConnection) -> diesel::QueryResult<()> {
    if Begin.execute(conn).is_err() {
        Rollback.execute(conn)?;
        Begin.execute(conn)?;
    }
    Ok(())
}

/// Ends the transaction `conn` has open, if any: a read changes nothing, so whether it
/// commits or rolls back makes no difference; if both fail, the next [`begin`] clears it.
/// The error is the commit's, for a caller that reports it.
pub(crate) fn end(conn: &mut SqliteConnection) -> diesel::QueryResult<()> {
    Commit.execute(conn).map(drop).inspect_err(|_| {
        let _ = Rollback.execute(conn);
    })
}

/// Runs `work` inside one deferred transaction on `conn`: committed if it succeeds, rolled
/// back if it fails. All of its queries see the same snapshot.
pub(crate) fn in_read_transaction<T, E: From<diesel::result::Error>>(
    conn: &mut SqliteConnection,
    work: impl FnOnce(&mut SqliteConnection) -> Result<T, E>,
) -> Result<T, E> {
    begin(conn)?;
    match work(conn) {
        Ok(value) => end(conn).map(|()| value).map_err(E::from),
        Err(error) => {
            // A read changes nothing: a failed rollback leaves only the snapshot, which the
            // next `BEGIN` on this connection clears.
            let _ = Rollback.execute(conn);
            Err(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use diesel::Connection;
    use diesel::QueryResult;
    use diesel::connection::SimpleConnection;
    use diesel::dsl::sql;
    use diesel::sql_types::BigInt;

    use super::*;

    fn count(conn: &mut SqliteConnection) -> QueryResult<i64> {
        diesel::select(sql::<BigInt>("(SELECT count(*) FROM t)")).get_result(conn)
    }

    fn open(dir: &tempfile::TempDir) -> SqliteConnection {
        let url = dir.path().join("reads.db");
        let mut conn = SqliteConnection::establish(url.to_str().unwrap()).unwrap();
        conn.batch_execute("PRAGMA journal_mode = WAL; CREATE TABLE IF NOT EXISTS t (x)")
            .unwrap();
        conn
    }

    #[test]
    fn a_read_sees_one_snapshot_and_leaves_no_transaction_open() {
        let dir = tempfile::tempdir().unwrap();
        let mut reader = open(&dir);
        let mut writer = open(&dir);
        let seen = in_read_transaction(&mut reader, |conn| {
            let before = count(conn)?;
            writer.batch_execute("INSERT INTO t VALUES (1)").unwrap();
            // Same snapshot: the write committed meanwhile is not seen.
            Ok::<_, diesel::result::Error>((before, count(conn)?))
        })
        .unwrap();
        assert_eq!(seen, (0, 0));
        // The next read is a new snapshot: the transaction was ended.
        let next = in_read_transaction(&mut reader, count).unwrap();
        assert_eq!(next, 1);
    }

    #[test]
    fn a_failed_read_rolls_back_and_a_leftover_transaction_is_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let mut reader = open(&dir);
        let mut writer = open(&dir);
        let failed = in_read_transaction(&mut reader, |conn| {
            count(conn)?;
            conn.batch_execute("SELECT * FROM no_such_table")
        });
        assert!(failed.is_err());
        // A transaction left open on the connection (as if COMMIT and ROLLBACK had failed).
        reader.batch_execute("BEGIN").unwrap();
        assert_eq!(count(&mut reader).unwrap(), 0);
        writer.batch_execute("INSERT INTO t VALUES (1)").unwrap();
        let next = in_read_transaction(&mut reader, count).unwrap();
        assert_eq!(next, 1, "the old snapshot was not reused");
    }
}

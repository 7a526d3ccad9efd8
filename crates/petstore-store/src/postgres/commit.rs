//! A write's one transaction and its `COMMIT`, and what became of a commit whose connection
//! broke before its answer came: asked of another connection, not guessed.

use std::time::Duration;

use diesel::RunQueryDsl;
use diesel::connection::{AnsiTransactionManager as Manager, SimpleConnection, TransactionManager};
use diesel::dsl::sql;
use diesel::pg::PgConnection;
use diesel::sql_types::{BigInt, Nullable, Text};
use petstore_core::{DomainError, Failure, RepoResult, Transaction};

use super::PgStore;
use super::connection::{PgConn, TIMELINE};
use super::held_back::{HeldBack, orders_counted_by_writer};
use super::tx::PgTx;
use crate::error::{StoreError, is_connection_lost};
use crate::known_rows::KnownRows;

impl PgStore {
    /// One transaction of `work`. Before its `COMMIT` it learns its transaction id (from the
    /// statement appending its events, or by asking), so that if the connection breaks
    /// during the `COMMIT` (the server may have committed before the answer was lost),
    /// [`resolve`](Self::resolve) can ask another connection whether it did: the write is
    /// then answered as what happened, and `OutcomeUnknown` only when no connection can tell.
    pub(super) fn write_once<T>(
        &self,
        conn: &mut PgConn,
        work: &mut impl FnMut(&mut dyn Transaction) -> RepoResult<T>,
    ) -> RepoResult<T> {
        let timeline = conn.timeline;
        let conn = &mut conn.conn;
        // The held-back writes count their orders into their pets (`HeldBack::place_order`),
        // so the trigger on orders must not count them again.
        Manager::begin_transaction_sql(
            conn,
            concat!(
                "BEGIN ISOLATION LEVEL READ COMMITTED; ",
                orders_counted_by_writer!()
            ),
        )
        .map_err(StoreError::from)?;
        let mut known_rows = KnownRows::served_once();
        let mut held_back = HeldBack::default();
        let (worked, known) = {
            let mut tx = PgTx::writing(&mut *conn, &mut known_rows, &mut held_back);
            let worked = work(&mut tx);
            (worked, tx.xid)
        };
        // What the work held back goes out now, before the commit. A statement of the work
        // that met the transaction a failed send aborted is answered with the send's failure.
        let done = match worked {
            Ok(value) => {
                let sent = held_back.send(conn);
                match held_back.take_failure() {
                    Some(failed) => Err(failed.into()),
                    None => Self::transaction_id(conn, known.or(sent)).map(|xid| (value, xid)),
                }
            }
            Err(error) => Err(held_back.take_failure().map_or(error, DomainError::from)),
        };
        let (value, xid) = match done {
            Ok(done) => done,
            Err(error) => {
                let _ = Manager::rollback_transaction(conn);
                return Err(error);
            }
        };
        self.commit(conn, xid, timeline).map(|()| value)
    }

    /// Commits the transaction open on `conn`, whose id is `xid` if it wrote, on a server
    /// of `timeline`. If the connection breaks during the `COMMIT`, the answer is what
    /// happened to the transaction, asked of another connection ([`resolve`](Self::resolve)).
    pub(super) fn commit(
        &self,
        conn: &mut PgConnection,
        xid: Option<i64>,
        timeline: i64,
    ) -> RepoResult<()> {
        // The COMMIT itself is not bounded by `statement_timeout`: a cancelled wait for a
        // synchronous standby would leave the commit made here only, and answered as made;
        // the request's deadline answers such a wait `OutcomeUnknown` instead. Lifted in the
        // same round trip as the COMMIT (Diesel sees the transaction end from the server's
        // answer).
        match conn.batch_execute("SET LOCAL statement_timeout = 0; COMMIT") {
            Ok(()) => {
                if let Some(replicas) = &self.replicas {
                    replicas.after_commit(conn, timeline);
                }
                Ok(())
            }
            Err(error) => {
                let error = StoreError::from(error);
                if !is_connection_lost(&error) {
                    return Err(error.into());
                }
                // A transaction that wrote nothing was never given an id: whatever became of
                // its COMMIT, nothing changed, and what it read stands.
                let Some(xid) = xid else {
                    return Ok(());
                };
                match self.resolve((xid, timeline)) {
                    Some(true) => {
                        // Committed, at a position no connection gave: no token until one
                        // asked after now is known.
                        if let Some(replicas) = &self.replicas {
                            replicas.commit_position_unknown();
                        }
                        Ok(())
                    }
                    Some(false) => Err(error.into()),
                    None => Err(DomainError::OutcomeUnknown(Failure::caused_by(error))),
                }
            }
        }
    }

    /// The id of the transaction open on `conn`, if it has written anything: `known`, where
    /// a statement returned it, or asked of the server.
    pub(super) fn transaction_id(
        conn: &mut PgConnection,
        known: Option<i64>,
    ) -> RepoResult<Option<i64>> {
        if known.is_some() {
            return Ok(known);
        }
        Ok(diesel::select(sql::<Nullable<BigInt>>(
            "pg_current_xact_id_if_assigned()::text::bigint",
        ))
        .get_result::<Option<i64>>(conn)
        .map_err(StoreError::from)?)
    }

    /// Whether the transaction `xid` of timeline `timeline` committed (`Some(true)`),
    /// aborted (`Some(false)`), or `None` when no connection could tell within
    /// [`RESOLVE_WITHIN`]. A transaction whose connection broke is still "in progress" until
    /// its server process notices: it is asked again until then.
    ///
    /// Only a server on the same timeline can say. After a failover the new primary (a new
    /// timeline) may never have received the transaction, not even its id, and give that id
    /// to one of its own: its status would then be another transaction's.
    fn resolve(&self, (xid, timeline): (i64, i64)) -> Option<bool> {
        let deadline = std::time::Instant::now() + RESOLVE_WITHIN;
        while std::time::Instant::now() < deadline {
            let status = self.pool.get().ok().and_then(|mut conn| {
                diesel::select((
                    sql::<Nullable<Text>>("pg_xact_status(")
                        .bind::<BigInt, _>(xid)
                        .sql("::text::xid8)"),
                    sql::<BigInt>(TIMELINE),
                ))
                .get_result::<(Option<String>, i64)>(&mut **conn)
                .ok()
            });
            let status = match status {
                Some((_, now)) if now != timeline => return None,
                Some((status, _)) => status,
                None => None,
            };
            match status.as_deref() {
                Some("committed") => return Some(true),
                Some("aborted") => return Some(false),
                // In progress, too old to know (NULL), or no connection yet: ask again.
                _ => std::thread::sleep(Duration::from_millis(50)),
            }
        }
        None
    }
}

/// How long a write whose `COMMIT` lost its connection waits to learn what became of it.
const RESOLVE_WITHIN: Duration = Duration::from_secs(2);

//! PostgreSQL's writes in bursts: the writes a writer thread takes from the executor's queue at
//! once share one transaction and one `COMMIT` (`docs/storage.md`, "Grouping on PostgreSQL").
//! A commit is most of what an order costs the server; four orders to a commit cost it about
//! two thirds of what four commits do.
//!
//! Each write runs in a savepoint of its own. One that fails, or is refused, rolls back to its
//! savepoint, and the writes before it keep theirs. The savepoint of the next write is taken
//! in the same round trip as the release of the last one's, so a write costs one round trip
//! more than its statements, where a transaction of its own costs two (`BEGIN`, `COMMIT`).
//!
//! A write can meet a conflict: a deadlock with another burst, whose writes took the same
//! rows in the other order. PostgreSQL then fails one statement of one of them. That write
//! rolls back to its savepoint, but the writes before it in this burst still hold their
//! locks, so running it again in place could close the same cycle. Instead the burst commits
//! what it has (a *segment*), and the write runs again at the start of a fresh transaction,
//! holding nothing else; the writes after it follow it there. Each write is answered with the
//! outcome of its own segment's `COMMIT`, and never before it.

use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::r2d2::PooledConnection;
use petstore_core::{DomainError, RepoResult, Snapshot, Store, Transaction};

use super::tx::PgTx;
use super::{CONFLICT_RETRIES, PgStore, PrimaryOnly};
use crate::error::{StoreError, is_conflict, is_read_only};

/// Begins a burst's transaction, and the savepoint of its first write, in one round trip.
const BEGIN: &str = "BEGIN ISOLATION LEVEL READ COMMITTED; SAVEPOINT write";

/// Ends the last write's savepoint, keeping its changes, and opens the next one's.
const NEXT_WRITE: &str = "RELEASE SAVEPOINT write; SAVEPOINT write";

/// Undoes what the current write did; its savepoint stays for the next write.
const UNDO_WRITE: &str = "ROLLBACK TO SAVEPOINT write";

/// One transaction on one pooled connection, shared by the writes of a burst.
pub(crate) struct PgWriteBurst<'s> {
    store: &'s PgStore,
    state: RefCell<Segment>,
}

/// The burst's current transaction, and what the ones before it came to.
struct Segment {
    conn: PooledConnection<PrimaryOnly>,
    /// The outcome of each segment committed before this one, in order.
    committed: Vec<RepoResult<()>>,
    /// This transaction's id, once a write's events gave it.
    xid: Option<i64>,
    /// The savepoint is fresh: no write has run in it since it was taken or rolled back to.
    fresh: bool,
    /// Why the burst cannot go on (its connection failed): every write from then on, and the
    /// segment's commit, answer this.
    broken: Option<DomainError>,
    /// Whether the transaction is still open (it is ended exactly once).
    open: bool,
}

impl<'s> PgWriteBurst<'s> {
    /// Takes a connection and begins the burst's first transaction.
    pub(crate) fn begin(store: &'s PgStore) -> RepoResult<Self> {
        let mut conn = store.pool.get().map_err(StoreError::from)?;
        conn.conn.batch_execute(BEGIN).map_err(StoreError::from)?;
        Ok(Self {
            store,
            state: RefCell::new(Segment {
                conn,
                committed: Vec::new(),
                xid: None,
                fresh: true,
                broken: None,
                open: true,
            }),
        })
    }

    /// The segment a write run now belongs to: the executor tags each write's answer with it.
    pub(crate) fn segment(&self) -> usize {
        self.state.borrow().committed.len()
    }

    /// Runs `work` in its own savepoint of the burst's transaction.
    pub(crate) fn write<T>(
        &self,
        mut work: impl FnMut(&mut dyn Transaction) -> RepoResult<T>,
    ) -> RepoResult<T> {
        // The connection is in use by the write this one was made from.
        let Ok(mut segment) = self.state.try_borrow_mut() else {
            return Err(DomainError::Storage(
                "a write cannot be made from inside another write".into(),
            ));
        };
        self.store.counts.writes.fetch_add(1, Ordering::Relaxed);
        let mut conflicts = 0;
        loop {
            segment.open_savepoint()?;
            let mut tx = PgTx::new(&mut segment.conn.conn, true);
            let result = work(&mut tx);
            let xid = tx.xid;
            match result {
                Ok(value) => {
                    segment.xid = segment.xid.or(xid);
                    return Ok(value);
                }
                Err(error) => {
                    segment.step(UNDO_WRITE)?;
                    segment.fresh = true;
                    if is_read_only(&error) {
                        // Of no use to writes until it reaches another server: dropped when
                        // it goes back to the pool.
                        segment.conn.refused_writes = true;
                    }
                    if conflicts >= CONFLICT_RETRIES || !is_conflict(&error) {
                        return Err(error);
                    }
                    conflicts += 1;
                    segment.commit_and_begin(self.store)?;
                    // A short, growing pause lets the transaction it met finish first.
                    std::thread::sleep(Duration::from_millis(2 << conflicts));
                }
            }
        }
    }

    /// A read made by a write of the burst: on a connection and in a transaction of its own,
    /// so that a read that fails cannot end the burst's transaction. It does not see the
    /// burst's uncommitted writes; a use case reads what its write depends on inside it.
    pub(crate) fn read<T>(
        &self,
        work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>,
    ) -> RepoResult<T> {
        self.store.read(work)
    }

    /// [`read`](Self::read) for a single statement.
    pub(crate) fn read_one<T>(
        &self,
        work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>,
    ) -> RepoResult<T> {
        self.store.read_one(work)
    }

    /// Commits the last segment and gives the outcome of every segment, in order.
    pub(crate) fn finish(self) -> Vec<RepoResult<()>> {
        let mut segment = self.state.into_inner();
        let last = segment.commit(self.store);
        let mut outcomes = std::mem::take(&mut segment.committed);
        outcomes.push(last);
        outcomes
    }
}

impl Segment {
    /// Sends `statement`; a failure breaks the burst.
    fn step(&mut self, statement: &str) -> RepoResult<()> {
        if let Some(broken) = &self.broken {
            return Err(broken.clone());
        }
        if let Err(error) = self.conn.conn.batch_execute(statement) {
            let error = DomainError::from(StoreError::from(error));
            self.broken = Some(error.clone());
            return Err(error);
        }
        Ok(())
    }

    /// Makes sure the next write starts in a savepoint of its own.
    fn open_savepoint(&mut self) -> RepoResult<()> {
        if !self.fresh {
            self.step(NEXT_WRITE)?;
            self.fresh = true;
        }
        self.fresh = false;
        Ok(())
    }

    /// Commits this segment and records its outcome, then begins the next one.
    fn commit_and_begin(&mut self, store: &PgStore) -> RepoResult<()> {
        let outcome = self.commit(store);
        self.committed.push(outcome);
        self.xid = None;
        self.step(BEGIN)?;
        self.open = true;
        self.fresh = true;
        Ok(())
    }

    /// Commits the open transaction (or rolls it back if the burst broke).
    fn commit(&mut self, store: &PgStore) -> RepoResult<()> {
        if !std::mem::replace(&mut self.open, false) {
            return Ok(());
        }
        if let Some(broken) = self.broken.clone() {
            let _ = self.conn.conn.batch_execute("ROLLBACK");
            return Err(broken);
        }
        let xid = match self.xid {
            Some(xid) => Some(xid),
            None => match PgStore::transaction_id(&mut self.conn.conn) {
                Ok(xid) => xid,
                Err(error) => {
                    let _ = self.conn.conn.batch_execute("ROLLBACK");
                    return Err(error);
                }
            },
        };
        let timeline = self.conn.timeline;
        let outcome = store.commit(&mut self.conn.conn, xid, timeline);
        if outcome.is_ok() {
            store.counts.commits.fetch_add(1, Ordering::Relaxed);
        }
        outcome
    }
}

/// A burst that ends without [`PgWriteBurst::finish`] (its thread panicked) leaves nothing
/// open on the connection it gives back to the pool.
impl Drop for Segment {
    fn drop(&mut self) {
        if self.open {
            let _ = self.conn.conn.batch_execute("ROLLBACK");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex, mpsc};
    use std::time::Duration;

    use petstore_core::{CategoryQuery, Name, NewCategory, Resource};

    use super::*;
    use crate::executor::{Executor, Wake};
    use crate::store::{AnyStore, JobStore};
    use crate::testing::ScratchPostgres;

    /// The executor of `store`, with its wake-ups held until the returned list is cleared: the
    /// writes queued by then make one burst.
    fn held_executor(store: &AnyStore) -> (Executor, Arc<Mutex<Vec<crate::executor::WakeUp>>>) {
        let held = Arc::new(Mutex::new(Vec::new()));
        let holder = Arc::clone(&held);
        let wake: Wake = Arc::new(move |wake_up| holder.lock().unwrap().push(wake_up));
        (store.executor(wake).unwrap().unwrap(), held)
    }

    #[test]
    fn a_write_refused_after_writing_is_undone_alone_and_the_burst_commits_the_rest() {
        let Some(database) = ScratchPostgres::create() else {
            return;
        };
        let store = AnyStore::open(&database.config()).unwrap();
        let (executor, held) = held_executor(&store);
        let commits_before = store.writer_stats().commits;
        let (answer, answered) = mpsc::channel();
        for (n, name) in ["Dogs", "Cats", "Birds"].into_iter().enumerate() {
            let answer = answer.clone();
            executor.write(
                move |store: JobStore<'_>| {
                    store.write(|tx| {
                        let new = NewCategory::new(Name::parse(name).unwrap());
                        let made = tx.insert_category(&new)?;
                        if n == 1 {
                            return Err(DomainError::PreconditionFailed(Resource::Category));
                        }
                        Ok(made.id)
                    })
                },
                move |result| answer.send((n, result)).unwrap(),
            );
        }
        held.lock().unwrap().clear();
        let mut answers: Vec<_> = (0..3)
            .map(|_| answered.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        answers.sort_by_key(|(n, _)| *n);
        assert!(answers[0].1.is_ok() && answers[2].1.is_ok(), "{answers:?}");
        assert_eq!(
            answers[1].1,
            Err(DomainError::PreconditionFailed(Resource::Category))
        );
        let kept: Vec<String> = store
            .read(|s| s.categories(&CategoryQuery::default()))
            .unwrap()
            .into_iter()
            .map(|category| category.name.to_string())
            .collect();
        assert_eq!(kept, ["Dogs", "Birds"], "the refused write left nothing");
        assert_eq!(
            store.writer_stats().commits - commits_before,
            1,
            "the three writes shared one commit"
        );
    }
}

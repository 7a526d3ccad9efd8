//! The Rust side of PostgreSQL's event feed. Its SQL side is the migration
//! `migrations/postgres/2026-11-25-000004_feed_in_commit_order/up.sql` (`stamp_events`,
//! `feed_after`, `feed_last`), and `docs/storage.md` ("The feed on PostgreSQL") says why.
//!
//! A change appends its events to `pending_events`, taking no lock; the stamper moves what
//! has committed into `events`, giving ids in the order stampers commit, before the feed is
//! read. So a reader sees every event up to some id, and never one below an id it has seen.

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::connection::SimpleConnection;
use diesel::dsl::sql;
use diesel::pg::PgConnection;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Nullable};
use petstore_core::{Cause, DomainEvent, Event, EventId, EventReader, EventWriter, RepoResult};

use super::PgStore;
use super::tx::{PgTx, repositories};
use crate::error::{QueryResultExt, StoreError};
use crate::job::Chore;
use crate::records::{EventRecord, actor_column};
use crate::statements::convert;

/// Begins a read transaction once the events committed so far are stamped, in one round
/// trip: the feed it reads holds them. A read transaction cannot write, so the stamp runs
/// first, in a transaction of its own begun explicitly (a `COMMIT` of the implicit one would
/// draw a warning into the server's log for every read).
pub(super) const STAMP_THEN_BEGIN_READ: &str =
    "BEGIN; SELECT stamp_events(); COMMIT; BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";

/// The feed: the stamped events. A statement on its own and a write transaction read through
/// the migration's functions, which stamp what has committed first: a client reading the feed
/// after a write sees its events, and a subscription starts after them. A read transaction
/// cannot write; it was stamped for when it began (`PgStore::read`).
impl EventReader for PgTx<'_> {
    fn events_after(&mut self, after: Option<EventId>, limit: u32) -> RepoResult<Vec<Event>> {
        if !self.stamps() {
            return self.stored_events_after(after, limit);
        }
        let rows: Vec<EventRecord> = diesel::sql_query(
            "SELECT id, time, type AS event_type, subject, data, traceparent, actor \
             FROM feed_after($1, $2)",
        )
        .bind::<BigInt, _>(after.map_or(0, EventId::get))
        .bind::<Integer, _>(i32::try_from(limit).unwrap_or(i32::MAX))
        .load(self.flushed())
        .or_storage()?;
        convert(rows)
    }

    fn last_event_id(&mut self) -> RepoResult<Option<EventId>> {
        if !self.stamps() {
            return self.stored_last_event_id();
        }
        let last: Option<i64> = diesel::select(sql::<Nullable<BigInt>>("feed_last()"))
            .get_result(self.flushed())
            .or_storage()?;
        repositories::events::event_id(last)
    }
}

impl EventWriter for PgTx<'_> {
    /// Appends to `pending_events` (held back with the write's other rows, `held_back.rs`),
    /// taking no lock: the stamper gives the events their ids
    /// once they have committed. Ids from a sequence at the append would follow the order
    /// transactions ask, not the order they commit, and a follower could read event 43
    /// before 42 commits, move past 42 and never see it; taking turns on one lock until the
    /// commit prevented that, at the cost of every change of the cluster committing one at a
    /// time.
    fn append_events(
        &mut self,
        time: DateTime<Utc>,
        cause: &Cause,
        events: &[DomainEvent],
    ) -> RepoResult<()> {
        if events.is_empty() {
            return Ok(());
        }
        let actor = actor_column(cause)?;
        self.held_back().or_storage()?.append_events(
            time,
            cause.trace.as_ref(),
            actor.as_deref(),
            events,
        );
        Ok(())
    }
}

/// How often a node vacuums the queue of pending events, when the feed has moved since.
const VACUUM_QUEUE_EVERY: Duration = Duration::from_secs(1);

/// Vacuums `pending_events` every [`VACUUM_QUEUE_EVERY`] once the feed has moved since the
/// last time. Each stamp deletes the rows it moved, and until a vacuum removes them every
/// later stamp reads through them, twice (the check for rows to move, and the `DELETE`):
/// autovacuum comes at most once a minute, by when a busy node has left hundreds of thousands
/// (a stamp then took 11 ms every 200 ms, and reads after heavy writes cost the server three
/// times as much; `docs/performance.md`). A second of dead rows takes the vacuum a few ms.
/// `SKIP_LOCKED`: a node finding another's vacuum running leaves it to that one. `TRUNCATE
/// false`: giving the empty pages back needs the table's exclusive lock, which under load
/// took up to 0.7 s of waiting and would stall the writes appending behind it; the pages are
/// reused instead, and autovacuum gives them back. A failure (a server away, a role that may
/// not vacuum, which only draws a warning) waits for the next time.
pub(super) fn queue_vacuum(store: &PgStore) -> Chore {
    let pool = store.pool.clone();
    let mut vacuumed_at = None;
    Chore {
        every: VACUUM_QUEUE_EVERY,
        run: Box::new(move || {
            let Ok(mut conn) = pool.get() else { return };
            let Ok(position) = event_id_position(&mut conn.conn) else {
                return;
            };
            if vacuumed_at != Some(position)
                && conn
                    .conn
                    .batch_execute("VACUUM (SKIP_LOCKED, TRUNCATE false) pending_events")
                    .is_ok()
            {
                vacuumed_at = Some(position);
            }
        }),
    }
}

/// The last id the feed gave (its stamper continues above it): at or above every event's.
pub(crate) fn event_id_position(conn: &mut PgConnection) -> Result<i64, StoreError> {
    Ok(diesel::select(sql::<BigInt>("(SELECT last_id FROM event_feed)")).get_result(conn)?)
}

/// Makes the feed give ids above `position` from now on.
pub(crate) fn move_event_ids_past(
    conn: &mut PgConnection,
    position: i64,
) -> Result<(), StoreError> {
    diesel::sql_query("UPDATE event_feed SET last_id = GREATEST(last_id, $1)")
        .bind::<BigInt, _>(position)
        .execute(conn)?;
    Ok(())
}

#[cfg(test)]
mod tests;

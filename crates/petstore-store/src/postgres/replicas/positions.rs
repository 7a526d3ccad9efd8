//! What the servers say of their place in the log: the primary's flush position, a standby's
//! replay position, and the wait for a standby to replay far enough for a burst's reads.

use std::time::{Duration, Instant};

use diesel::pg::PgConnection;
use diesel::sql_types::{BigInt, Bool, Nullable};
use diesel::{QueryResult, RunQueryDsl};

use crate::freshness::Position;
use crate::job::ReadJob;
use crate::postgres::connection::PgConn;
use crate::postgres::prepared::fixed_select;

/// How long a burst waiting for a standby to replay sleeps between two looks.
const POLL: Duration = Duration::from_millis(1);

// Prepared (`fixed_select!`): every read burst asks one of these, and the server would
// otherwise parse and plan it each time.
fixed_select!(
    /// The primary's flush position: past every commit it has acknowledged (a commit is
    /// flushed before its answer), and only as far as what it can send its standbys.
    FlushPosition: BigInt = "(pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::bigint"
);

fixed_select!(
    /// A standby's state: whether it is one, the timeline it receives (`NULL` without a WAL
    /// receiver, or for a role without `pg_read_all_stats`), how far it has replayed, and how
    /// far it has received and flushed.
    Replayed: (Bool, Nullable<BigInt>, Nullable<BigInt>, Nullable<BigInt>) = "pg_is_in_recovery(), \
         (SELECT received_tli FROM pg_stat_wal_receiver)::bigint, \
         (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint, \
         (pg_last_wal_receive_lsn() - '0/0'::pg_lsn)::bigint"
);

/// Whether a standby that replayed `replayed` shows every commit at or before `needed`.
pub(super) fn reaches(replayed: Position, needed: Position) -> bool {
    replayed.timeline == needed.timeline && replayed.lsn >= needed.lsn
}

/// The primary's position, on a connection of its pool to a server of `timeline`.
pub(super) fn primary_position(conn: &mut PgConnection, timeline: i64) -> QueryResult<Position> {
    let lsn: i64 = diesel::select(FlushPosition).get_result(conn)?;
    primary_at(timeline, lsn)
}

/// The primary's flush position `lsn`, as a server of `timeline` gave it.
pub(super) fn primary_at(timeline: i64, lsn: i64) -> QueryResult<Position> {
    position(timeline, Some(lsn)).ok_or_else(|| {
        diesel::result::Error::QueryBuilderError(
            format!("no primary's position (timeline {timeline})").into(),
        )
    })
}

pub(super) fn position(timeline: i64, lsn: Option<i64>) -> Option<Position> {
    Some(Position {
        timeline: u32::try_from(timeline).ok()?,
        lsn: u64::try_from(lsn?).ok()?,
    })
}

/// What a standby says of its place in the log.
#[derive(Debug, Clone, Copy)]
struct Looked {
    /// How far it has replayed: `None` when it is not a standby, receives no timeline, or
    /// has replayed nothing.
    replayed: Option<Position>,
    /// How far it has received and flushed, on the timeline it receives.
    received: Option<Position>,
}

fn look(conn: &mut PgConnection) -> QueryResult<Looked> {
    let (recovering, timeline, replayed, received): (bool, Option<i64>, Option<i64>, Option<i64>) =
        diesel::select(Replayed).get_result(conn)?;
    Ok(match (recovering, timeline) {
        (true, Some(timeline)) => Looked {
            replayed: position(timeline, replayed),
            received: position(timeline, received),
        },
        _ => Looked {
            replayed: None,
            received: None,
        },
    })
}

/// What a read with no position of its own needs of a synchronous standby that must have
/// replayed `floor`: that, and what the standby had received when looked at after the read
/// was queued. `None` (it cannot be served there) when the two are on different timelines.
fn own_requirement(floor: Option<Position>, received: Option<Position>) -> Option<Position> {
    match (floor, received) {
        (Some(floor), Some(received)) if floor.timeline == received.timeline => {
            Some(floor.max(received))
        }
        _ => None,
    }
}

/// Looks at how far the standby of `conn` has replayed until it has for every job of
/// `waiting`, or until `by`: the jobs it can serve, and those it cannot. A job waits for its
/// position, or, with none (a synchronous standby's, [`super::synchronous`]), for what the
/// standby had received at the first look and for `floor`. `Err` gives every job back when
/// the standby does not answer.
#[allow(clippy::type_complexity, reason = "the two halves of one split")]
pub(super) fn until_replayed(
    conn: &mut PgConn,
    waiting: Vec<(Option<Position>, ReadJob)>,
    floor: Option<Position>,
    by: Instant,
) -> Result<(Vec<ReadJob>, Vec<ReadJob>), Vec<ReadJob>> {
    #[cfg(feature = "plant-replica-unchecked")]
    {
        let _ = (&conn, floor, by);
        return Ok((
            waiting.into_iter().map(|(_, job)| job).collect(),
            Vec::new(),
        ));
    }
    #[allow(unreachable_code, reason = "the planted bug returns above")]
    let mut own: Option<Option<Position>> = None;
    loop {
        let looked = match look(&mut conn.conn) {
            Ok(looked) => looked,
            Err(_) => return Err(waiting.into_iter().map(|(_, job)| job).collect()),
        };
        // Fixed at the first look: later ones would ask for more than the reads need.
        let own_needed = *own.get_or_insert_with(|| own_requirement(floor, looked.received));
        let ready = |needed: &Option<Position>| match (looked.replayed, needed.or(own_needed)) {
            (Some(replayed), Some(needed)) => reaches(replayed, needed),
            _ => false,
        };
        let all = waiting.iter().all(|(needed, _)| ready(needed));
        if all || Instant::now() + POLL >= by {
            let (ready, late): (Vec<_>, Vec<_>) =
                waiting.into_iter().partition(|(needed, _)| ready(needed));
            return Ok((
                ready.into_iter().map(|(_, job)| job).collect(),
                late.into_iter().map(|(_, job)| job).collect(),
            ));
        }
        std::thread::sleep(POLL);
    }
}

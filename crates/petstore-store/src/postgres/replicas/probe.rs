//! The probes: a thread asking the primary where it is, and one per standby asking how far
//! it has replayed, each every [`PROBE_EVERY`]. What they see decides which standbys a burst
//! of reads may go to (`replicas.rs`) and what `/metrics` says of them. A standby's probe
//! logs what it found when that changes (at start, up, down, or down for another reason),
//! with the reason: the error its connection or its statement met, or what the answer
//! showed (not in recovery, another cluster, no WAL receiver, a role without the grant).

use std::sync::Weak;
use std::time::Instant;

use diesel::RunQueryDsl;
use diesel::dsl::sql;
use diesel::pg::PgConnection;
use diesel::r2d2::ManageConnection;
use diesel::sql_types::{BigInt, Bool, Nullable, Text};

use super::positions::position;
use super::synchronous::{SYNC_PROBE_EVERY, SenderNames, primary_view, receiver_name};
use super::{PROBE_EVERY, PROBE_TRUSTED_FOR, Replicas, lock};
use crate::freshness::Position;
use crate::postgres::connection::{PgConn, PgPool, PrimaryOnly};

/// The cluster's identity: a standby of this primary has the same.
const SYSTEM: &str = "(SELECT system_identifier FROM pg_control_system())::text";

/// What a standby's probe asks, in one statement: the role it connected as, its cluster,
/// whether it is in recovery, whether a WAL receiver runs (its `pid` is shown to every
/// role), the timeline that receiver receives (shown only to a role with
/// `pg_read_all_stats`), how far it has replayed, and the receiver's connection string
/// (shown as the timeline is), which names it to the primary.
const STANDBY: &str = "current_user::text, \
     (SELECT system_identifier FROM pg_control_system())::text, \
     pg_is_in_recovery(), \
     EXISTS (SELECT 1 FROM pg_stat_wal_receiver), \
     (SELECT received_tli FROM pg_stat_wal_receiver)::bigint, \
     (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint, \
     (SELECT conninfo FROM pg_stat_wal_receiver)";

/// Asks the primary where it is, for staleness reads and the standbys' lag, and which
/// standbys its commits wait for ([`super::synchronous`]): every [`PROBE_EVERY`], or every
/// [`SYNC_PROBE_EVERY`] while one counts as synchronous; and its cluster's identity, until it
/// is known (a promotion keeps it).
pub(super) fn primary(replicas: &Weak<Replicas>, primary: &PgPool) {
    let mut names = SenderNames::default();
    loop {
        let Some(system_known) = replicas.upgrade().map(|this| this.system.get().is_some()) else {
            return;
        };
        let asked = Instant::now();
        let answer = primary.get().ok().and_then(|mut conn| {
            let timeline = conn.timeline;
            let (position, view) = primary_view(&mut conn.conn, timeline, &mut names).ok()?;
            let system = if system_known {
                None
            } else {
                diesel::select(sql::<Text>(SYSTEM))
                    .get_result::<String>(&mut conn.conn)
                    .ok()
            };
            Some((position, view, system))
        });
        let Some(replicas) = replicas.upgrade() else {
            return;
        };
        match answer {
            Some((position, view, system)) => {
                replicas.keep(asked, position);
                if let Some(system) = system {
                    let _ = replicas.system.set(system);
                }
                for standby in &replicas.standbys {
                    standby.sync.saw(&view, position, asked);
                }
            }
            None => {
                for standby in &replicas.standbys {
                    standby.sync.forget();
                }
            }
        }
        let every = if replicas.standbys.iter().any(|s| s.sync.is_synchronous()) {
            SYNC_PROBE_EVERY
        } else {
            PROBE_EVERY
        };
        drop(replicas);
        std::thread::sleep(every.saturating_sub(asked.elapsed()));
    }
}

/// Asks standby `index` how far it has replayed every [`PROBE_EVERY`], on a connection of
/// the probe's own (a pool busy with reads does not make it look down, and a failed connect
/// says why). It is up only while it is a standby of the primary's cluster, receiving a
/// timeline.
pub(super) fn standby(replicas: &Weak<Replicas>, index: usize) {
    let started = Instant::now();
    let mut conn: Option<PgConn> = None;
    let mut told = Told::default();
    loop {
        let Some(this) = replicas.upgrade() else {
            return;
        };
        let Some(standby) = this.standbys.get(index) else {
            return;
        };
        let manager = std::sync::Arc::clone(&standby.probe);
        let primary_system = this.system.get().cloned();
        drop(this);
        let asked = Instant::now();
        let (mut verdict, conninfo) = match ask(&mut conn, &manager) {
            Ok(answer) => (judge(&answer, primary_system.as_deref()), answer.conninfo),
            Err(error) => (Verdict::Down(error), None),
        };
        if verdict == Verdict::Unjudged && started.elapsed() >= PROBE_TRUSTED_FOR {
            verdict = Verdict::Down(
                "the primary's cluster identity is not known (the primary's probe has not \
                 read it), so it cannot be told to be a standby of this primary"
                    .into(),
            );
        }
        let Some(this) = replicas.upgrade() else {
            return;
        };
        if let Some(standby) = this.standbys.get(index) {
            let replayed = match verdict {
                Verdict::Up(at) => Some(at),
                _ => None,
            };
            *lock(&standby.seen) = Some((asked, replayed));
            standby.sync.named(
                replayed
                    .and(conninfo)
                    .map(|conninfo| receiver_name(&conninfo)),
            );
            if told.news(&verdict) {
                match &verdict {
                    Verdict::Up(at) => {
                        tracing::info!(server = %standby.name, replayed = %at, "read standby up")
                    }
                    Verdict::Down(error) => {
                        tracing::warn!(server = %standby.name, %error, "read standby down")
                    }
                    Verdict::Unjudged => {}
                }
            }
        }
        drop(this);
        std::thread::sleep(PROBE_EVERY.saturating_sub(asked.elapsed()));
    }
}

/// What a standby answered its probe ([`STANDBY`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Answer {
    pub(super) role: String,
    pub(super) system: String,
    pub(super) recovering: bool,
    pub(super) receiver: bool,
    pub(super) timeline: Option<i64>,
    pub(super) replayed: Option<i64>,
    pub(super) conninfo: Option<String>,
}

/// Asks the standby on the probe's connection, connecting first when it has none; a
/// connection whose statement failed is dropped, to be made again at the next probe. `Err`
/// says what failed, on one line.
fn ask(conn: &mut Option<PgConn>, manager: &PrimaryOnly) -> Result<Answer, String> {
    let mut connected = match conn.take() {
        Some(connected) => connected,
        None => manager
            .connect()
            .map_err(|error| format!("cannot connect: {}", one_line(&error)))?,
    };
    let answer = asked(&mut connected.conn)
        .map_err(|error| format!("its probe failed: {}", one_line(&error)))?;
    *conn = Some(connected);
    Ok(answer)
}

fn asked(conn: &mut PgConnection) -> diesel::QueryResult<Answer> {
    type Row = (
        Text,
        Text,
        Bool,
        Bool,
        Nullable<BigInt>,
        Nullable<BigInt>,
        Nullable<Text>,
    );
    let (role, system, recovering, receiver, timeline, replayed, conninfo) =
        diesel::select(sql::<Row>(STANDBY)).get_result(conn)?;
    Ok(Answer {
        role,
        system,
        recovering,
        receiver,
        timeline,
        replayed,
        conninfo,
    })
}

/// An error's text on one line: libpq's messages span several.
fn one_line(error: &dyn std::fmt::Display) -> String {
    error
        .to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a probe found: how far the standby has replayed, or why it serves no reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    Up(Position),
    Down(String),
    /// A standby that may be the primary's, whose identity is not known yet (the first
    /// probes may come before the primary's first answer).
    Unjudged,
}

/// Judges a standby's `answer`, against the primary's cluster identity where it is known.
pub(super) fn judge(answer: &Answer, primary_system: Option<&str>) -> Verdict {
    let down = |why: String| Verdict::Down(why);
    if !answer.recovering {
        return down("not a standby: the server is not in recovery (a primary)".into());
    }
    if !answer.receiver {
        return down(
            "no WAL receiver runs on it: it is not streaming from a primary (its server log \
             says why)"
                .into(),
        );
    }
    let Some(timeline) = answer.timeline else {
        return down(format!(
            "its WAL receiver's timeline is hidden from the role {role}: grant it \
             pg_read_all_stats (GRANT pg_read_all_stats TO {role}, on the primary)",
            role = answer.role
        ));
    };
    match primary_system {
        None => Verdict::Unjudged,
        Some(primary) if primary != answer.system => down(format!(
            "not a standby of this primary: its cluster is {}, the primary's {primary}",
            answer.system
        )),
        Some(_) => match position(timeline, answer.replayed) {
            Some(at) => Verdict::Up(at),
            None => down("it has replayed nothing yet".into()),
        },
    }
}

/// What the log last said of a standby: nothing yet, up, or down and why. It speaks again
/// only when that changes: a standby that stays down for one reason is logged once.
#[derive(Debug, Default)]
pub(super) struct Told(Option<Option<String>>);

impl Told {
    /// Whether `verdict` is news to the log; if so, it is taken as said.
    pub(super) fn news(&mut self, verdict: &Verdict) -> bool {
        let now = match verdict {
            Verdict::Up(_) => None,
            Verdict::Down(why) => Some(why.clone()),
            Verdict::Unjudged => return false,
        };
        if self.0.as_ref() == Some(&now) {
            return false;
        }
        self.0 = Some(now);
        true
    }
}

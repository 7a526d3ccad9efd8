//! Synchronous standbys: reads of the latest state that ask the primary nothing.
//!
//! With `synchronous_commit` at `on` or `remote_apply`, the primary acknowledges a commit only
//! once its synchronous standby has flushed (or applied) the commit's WAL. Such a standby has
//! received every commit acknowledged before a read was queued, so its own received position,
//! read after the read was queued, is as good a requirement as the primary's: the read waits
//! for the standby's replay to reach it and never contacts the primary. `remote_write` does
//! not count: a standby that crashes loses WAL it had written but not flushed, and comes back
//! having received less than was acknowledged.
//!
//! Nothing is taken on trust from configuration: the primary's probe reads, on a connection of
//! the pool the node commits on (so with the `synchronous_commit` its commits get, whether set
//! for the server, the role, or the database), which standbys `pg_stat_replication` shows as
//! `sync`, and each standby's probe reads the name its WAL receiver gives the primary. A
//! standby counts only while exactly one WAL sender carries its name and that one is `sync`,
//! and only once it has replayed the primary's flush position at the probe that first found it
//! so: commits acknowledged before it became synchronous did not wait for it. While one
//! counts, the primary is probed every [`SYNC_PROBE_EVERY`], and a standby not seen
//! synchronous within [`SYNC_TRUSTED_FOR`] stops counting: a setting changed, a failover or a
//! lost probe sends reads back to the shared question within that bound.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use diesel::RunQueryDsl;
use diesel::pg::PgConnection;
use diesel::sql_types::{Array, BigInt, Text};

use super::lock;
use super::positions::primary_at;
use crate::freshness::Position;
use crate::postgres::prepared::fixed_select;

/// How often the primary is probed while a standby counts as synchronous: a changed setting
/// or a standby no longer `sync` is seen within about this long.
pub(super) const SYNC_PROBE_EVERY: Duration = Duration::from_millis(25);

/// How long a standby seen synchronous by the primary's probe counts as such: probes that
/// fail or come late end it.
const SYNC_TRUSTED_FOR: Duration = Duration::from_millis(75);

fixed_select!(
    /// What the primary's probe asks, in one statement: its flush position, the
    /// `synchronous_commit` of the session (the pool's, as its commits get it), and each WAL
    /// sender's state and process id, `<state> <pid>`. `pg_stat_get_wal_senders()` reads
    /// only the senders' slots; the names are the view's (`pg_stat_replication`), whose pass
    /// over every backend's status costs the primary a quarter of a millisecond, so they are
    /// read only every [`NAMES_KEPT_FOR`] or when a sender is new ([`SenderNames`]).
    /// Prepared, as it is asked forty times a second while a standby counts.
    PrimaryView: (BigInt, Text, Array<Text>) =
        "(pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::bigint, \
         current_setting('synchronous_commit'), \
         ARRAY(SELECT coalesce(sync_state, '') || ' ' || pid FROM pg_stat_get_wal_senders())"
);

fixed_select!(
    /// The WAL senders' names, `<pid> <name>`.
    SenderNamesNow: Array<Text> = "ARRAY(SELECT pid || ' ' || coalesce(application_name, '') \
         FROM pg_stat_replication)"
);

/// How long the WAL senders' names are kept: a standby's sender keeps its name for its life
/// (a physical replication connection runs no `SET`), and a new one has a process id not kept.
const NAMES_KEPT_FOR: Duration = Duration::from_secs(1);

/// The WAL senders' names by process id, as the primary's probe last read them.
#[derive(Debug, Default)]
pub(super) struct SenderNames {
    by_pid: Vec<(i64, String)>,
    read: Option<Instant>,
}

impl SenderNames {
    fn name_of(&self, pid: i64) -> Option<&str> {
        self.by_pid
            .iter()
            .find(|(known, _)| *known == pid)
            .map(|(_, name)| name.as_str())
    }

    /// Reads them again when older than [`NAMES_KEPT_FOR`] or missing one of `pids`.
    fn refresh(&mut self, conn: &mut PgConnection, pids: &[i64]) -> diesel::QueryResult<()> {
        let fresh = self
            .read
            .is_some_and(|read| read.elapsed() < NAMES_KEPT_FOR);
        if fresh && pids.iter().all(|pid| self.name_of(*pid).is_some()) {
            return Ok(());
        }
        let named: Vec<String> = diesel::select(SenderNamesNow).get_result(conn)?;
        self.by_pid = named
            .iter()
            .filter_map(|line| {
                let (pid, name) = line.split_once(' ')?;
                Some((pid.parse().ok()?, name.to_owned()))
            })
            .collect();
        self.read = Some(Instant::now());
        Ok(())
    }
}

/// What the primary said of its synchronous replication.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct SyncView {
    /// Whether the pool's commits wait for a synchronous standby to flush or apply them.
    commits_wait: bool,
    /// The names of the WAL senders in state `sync`.
    sync: Vec<String>,
    /// The names of the others.
    others: Vec<String>,
}

impl SyncView {
    pub(super) fn new(synchronous_commit: &str, sync: Vec<String>, others: Vec<String>) -> Self {
        Self {
            commits_wait: matches!(synchronous_commit, "on" | "remote_apply"),
            sync,
            others,
        }
    }

    /// Whether the commits wait for the standby whose WAL receiver is called `name`: the one
    /// WAL sender of that name is `sync`.
    pub(super) fn waits_for(&self, name: &str) -> bool {
        self.commits_wait
            && self.sync.iter().filter(|sender| *sender == name).count() == 1
            && !self.others.iter().any(|sender| sender == name)
    }
}

/// The primary's flush position on `timeline` and what it says of synchronous replication;
/// `names` keeps the WAL senders' names between probes.
pub(super) fn primary_view(
    conn: &mut PgConnection,
    timeline: i64,
    names: &mut SenderNames,
) -> diesel::QueryResult<(Position, SyncView)> {
    let (lsn, commit, senders): (i64, String, Vec<String>) =
        diesel::select(PrimaryView).get_result(conn)?;
    let senders: Vec<(&str, Option<i64>)> = senders
        .iter()
        .map(|line| match line.split_once(' ') {
            Some((state, pid)) => (state, pid.parse().ok()),
            None => (line.as_str(), None),
        })
        .collect();
    let pids: Vec<i64> = senders.iter().filter_map(|(_, pid)| *pid).collect();
    names.refresh(conn, &pids)?;
    let (mut sync, mut others) = (Vec::new(), Vec::new());
    for (state, pid) in senders {
        // A sender whose name is not known (it began after the names were read) is no one's.
        let name = pid.and_then(|pid| names.name_of(pid)).unwrap_or_default();
        match state {
            "sync" => sync.push(name.to_owned()),
            _ => others.push(name.to_owned()),
        }
    }
    Ok((
        primary_at(timeline, lsn)?,
        SyncView::new(&commit, sync, others),
    ))
}

/// What a node knows of one standby's synchronous replication.
#[derive(Debug, Default)]
pub(super) struct SyncState {
    /// The name its WAL receiver gives the primary, as its last probe read it.
    name: Mutex<Option<String>>,
    /// Since when the primary's probe has found it synchronous, without a break.
    synced: Mutex<Option<Synced>>,
}

#[derive(Debug, Clone, Copy)]
struct Synced {
    /// The primary's flush position at the probe that first found it synchronous: commits up
    /// to there may not have waited for it.
    since: Position,
    /// When the last probe that found it so was sent.
    seen: Instant,
}

impl SyncState {
    /// Keeps the name its WAL receiver gave (`None`: it has none, or its probe failed).
    pub(super) fn named(&self, name: Option<String>) {
        *lock(&self.name) = name;
    }

    /// Takes in what the primary's probe, sent at `asked`, found: `view`, at `primary`.
    pub(super) fn saw(&self, view: &SyncView, primary: Position, asked: Instant) {
        let waits = lock(&self.name)
            .as_deref()
            .is_some_and(|name| view.waits_for(name));
        let mut synced = lock(&self.synced);
        *synced = match *synced {
            _ if !waits => None,
            // Still synchronous, on the same timeline: since when stays.
            Some(Synced { since, .. }) if since.timeline == primary.timeline => {
                Some(Synced { since, seen: asked })
            }
            _ => Some(Synced {
                since: primary,
                seen: asked,
            }),
        };
    }

    /// Forgets that it was synchronous (the primary could not be asked).
    pub(super) fn forget(&self) {
        *lock(&self.synced) = None;
    }

    /// Whether it was found synchronous recently.
    pub(super) fn is_synchronous(&self) -> bool {
        self.floor().is_some()
    }

    /// If it counts as synchronous: the position it must have replayed besides what it has
    /// received when a read looks.
    pub(super) fn floor(&self) -> Option<Position> {
        lock(&self.synced)
            .filter(|synced| synced.seen.elapsed() < SYNC_TRUSTED_FOR)
            .map(|synced| synced.since)
    }
}

/// The name a WAL receiver gives its primary (`application_name` in `pg_stat_replication`),
/// from the connection string `pg_stat_wal_receiver` shows: its `application_name`, else its
/// `fallback_application_name` (the standby's `cluster_name`), else libpq's default.
pub(super) fn receiver_name(conninfo: &str) -> String {
    let pairs = conninfo_pairs(conninfo);
    let value = |key: &str| {
        pairs
            .iter()
            .find(|(name, value)| name == key && !value.is_empty())
            .map(|(_, value)| value.clone())
    };
    value("application_name")
        .or_else(|| value("fallback_application_name"))
        .unwrap_or_else(|| "walreceiver".to_owned())
}

/// The `key=value` pairs of a libpq connection string: a value is a word, or quoted with
/// single quotes, in which a backslash takes the next character as it is.
fn conninfo_pairs(conninfo: &str) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let mut chars = conninfo.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let key: String =
            std::iter::from_fn(|| chars.next_if(|c| *c != '=' && !c.is_whitespace())).collect();
        if key.is_empty() {
            return pairs;
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next_if_eq(&'=').is_none() {
            return pairs;
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            while let Some(c) = chars.next() {
                match c {
                    '\'' => break,
                    '\\' => value.extend(chars.next()),
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                match c {
                    '\\' => value.extend(chars.next()),
                    c => value.push(c),
                }
            }
        }
        pairs.push((key, value));
    }
}

#[cfg(test)]
mod tests;

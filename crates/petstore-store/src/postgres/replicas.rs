//! Read standbys: hot standbys of the primary that serve reads, without any read going back
//! in time (`docs/deployment.md`, "Read standbys").
//!
//! A read must see every write acknowledged before it was sent, on any node. A standby
//! replays the primary's write-ahead log behind it, so a read may go to one only once it has
//! replayed past a position the primary had *after* the read was queued: a write
//! acknowledged before then committed at or before that position. As a Raft leader's
//! ReadIndex does, reads of the latest state ([`Freshness::Latest`]) share one question to
//! the primary, one cheap statement sent after every one of them was queued
//! ([`SharedQuestion`]), unless a position was asked since they were (a commit's token, a
//! probe): the standby's own replay position is then read on the connection the burst will
//! use, before any of the burst's snapshots is taken. A read that names a position (a client's
//! consistency token, [`Freshness::Since`]) or a staleness it accepts
//! ([`Freshness::Within`], judged against the positions the primary was seen at) asks the
//! primary nothing.
//!
//! Positions are compared only on one timeline: a standby still replaying an older one may
//! have replayed, past the position asked for, a history the new primary never had.
//!
//! A read waits for a standby at most [`Replicas::wait`], then the primary serves it; a
//! standby that is down, or not a standby of this primary, is skipped at once (each is probed
//! on a thread of its own, [`PROBE_EVERY`]).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use diesel::r2d2::{ConnectionManager, Pool, PooledConnection};

use super::PgStore;
use super::connection::{PgPool, PrimaryOnly, postgres_url};
use crate::config::{Database, StoreConfig};
use crate::error::StoreError;
use crate::freshness::{Freshness, Position};
use crate::job::ReadJob;
use crate::stats::ServerReads;
use commits::CommitMark;
use positions::{primary_position, reaches, until_replayed};
use question::SharedQuestion;
use standby::{Standby, first_synchronous};
use synchronous::SyncState;

/// How often each standby, and the primary, are asked where they are.
pub(super) const PROBE_EVERY: Duration = Duration::from_millis(100);

/// A standby whose last probe is older than this is taken for down.
const PROBE_TRUSTED_FOR: Duration = Duration::from_secs(1);

/// How long the primary's positions are kept for bounded-staleness reads; a bound beyond it
/// is judged against the oldest kept, which asks for more than it needs, never less.
const SAMPLES_KEPT: Duration = Duration::from_secs(60);

/// The most often a position is kept: a read queued between two kept positions waits for
/// the later, so more would spare the primary few questions; at most 60,000 are kept.
const SAMPLE_SPACING: Duration = Duration::from_millis(1);

/// The read standbys of one store, and what it has seen of them and of its primary.
pub(super) struct Replicas {
    standbys: Vec<Standby>,
    /// The most a read waits for a standby before the primary serves it.
    wait: Duration,
    /// The primary's positions as asked (probes, bursts and commits), oldest first.
    samples: Mutex<VecDeque<Sample>>,
    /// The position question the reader threads share.
    question: SharedQuestion,
    /// The primary's cluster identity, once known.
    system: OnceLock<String>,
    /// Where this node's commits have reached: the consistency token of its writes.
    committed: Mutex<CommitMark>,
    primary_reads: AtomicU64,
    /// Where the next burst starts looking for a standby (round robin).
    next: AtomicUsize,
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    /// When the question was sent: every write acknowledged before then is at or before
    /// `position`.
    asked: Instant,
    position: Position,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Where a burst's reads go: those a standby has replayed far enough for, with a connection
/// to it, and the rest, to the primary (which serves them after the standby's).
pub(super) struct Routed {
    pub(super) standby: Option<(PooledConnection<PrimaryOnly>, Vec<ReadJob>)>,
    pub(super) primary: Vec<ReadJob>,
}

impl Routed {
    fn to_primary(jobs: Vec<ReadJob>) -> Self {
        Self {
            standby: None,
            primary: jobs,
        }
    }
}

impl Replicas {
    /// The standbys of `config`, each with a pool of its own that connects when first used:
    /// a standby down at start delays nothing.
    pub(super) fn open(config: &StoreConfig) -> Result<Option<Arc<Self>>, StoreError> {
        if config.replicas.is_empty() {
            return Ok(None);
        }
        let standbys = config
            .replicas
            .iter()
            .enumerate()
            .map(|(index, url)| {
                let standby = StoreConfig {
                    database: Database::Postgres(url.clone()),
                    ..config.clone()
                };
                let url = postgres_url(&standby)?;
                let manager = || PrimaryOnly {
                    manager: ConnectionManager::new(url.clone()),
                    statement_timeout: config.statement_timeout,
                    read_only: true,
                };
                let pool = Pool::builder()
                    .max_size(config.readers.max(2))
                    .min_idle(Some(0))
                    .connection_timeout(config.replica_wait.max(Duration::from_millis(1)))
                    .build_unchecked(manager());
                Ok(Standby {
                    name: format!("replica-{}", index + 1),
                    pool,
                    probe: Arc::new(manager()),
                    seen: Mutex::new(None),
                    sync: SyncState::default(),
                    reads: AtomicU64::new(0),
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(Some(Arc::new(Self {
            standbys,
            wait: config.replica_wait,
            samples: Mutex::default(),
            question: SharedQuestion::default(),
            system: OnceLock::new(),
            committed: Mutex::default(),
            primary_reads: AtomicU64::new(0),
            next: AtomicUsize::new(0),
        })))
    }

    /// Starts the probes: one thread asking the primary where it is, one per standby asking
    /// how far it has replayed. They stop once the store is gone.
    pub(super) fn start_probes(this: &Arc<Self>, primary: PgPool) -> std::io::Result<()> {
        let weak = Arc::downgrade(this);
        std::thread::Builder::new()
            .name("petstore-primary-probe".into())
            .spawn(move || probe::primary(&weak, &primary))?;
        for index in 0..this.standbys.len() {
            let weak = Arc::downgrade(this);
            std::thread::Builder::new()
                .name(format!("petstore-replica-probe-{}", index + 1))
                .spawn(move || probe::standby(&weak, index))?;
        }
        Ok(())
    }

    /// Routes `jobs` (none of which needs the primary itself): to one standby, with a
    /// connection to it, those it has replayed far enough for; to the primary the rest: all
    /// of them when no standby is up, the primary's position cannot be asked, or the standby
    /// fails; those the standby has not replayed far enough for within [`Self::wait`].
    pub(super) fn serve(&self, store: &PgStore, jobs: Vec<ReadJob>) -> Routed {
        let up = self.standbys_up();
        if up.is_empty() {
            return Routed::to_primary(jobs);
        }
        let known: Vec<(Option<Position>, ReadJob)> = jobs
            .into_iter()
            .map(|job| (self.known_requirement(&job), job))
            .collect();
        let last_unknown = known
            .iter()
            .filter(|(needed, _)| needed.is_none())
            .map(|(_, job)| job.queued)
            .max();
        // A synchronous standby has every acknowledged commit: no question is asked.
        let synchronous = last_unknown.and_then(|_| first_synchronous(&up));
        let latest = match (last_unknown, synchronous) {
            (Some(queued), None) => match self
                .question
                .position_after(queued, || self.ask_primary(store))
            {
                Some(position) => Some(position),
                None => return Routed::to_primary(known.into_iter().map(|(_, job)| job).collect()),
            },
            _ => None,
        };
        // A job with no position to wait for (none of the reads that come here) is the
        // primary's, unless a synchronous standby's own position serves it.
        let mut primary = Vec::new();
        let mut waiting: Vec<(Option<Position>, ReadJob)> = Vec::with_capacity(known.len());
        for (needed, job) in known {
            match needed.or(latest) {
                Some(needed) => waiting.push((Some(needed), job)),
                None if synchronous.is_some() && job.freshness != Freshness::Primary => {
                    waiting.push((None, job));
                }
                None => primary.push(job),
            }
        }
        let (standby, floor) = match synchronous {
            Some((standby, floor)) => (standby, Some(floor)),
            None => match waiting.iter().filter_map(|(needed, _)| *needed).max() {
                Some(needed) => (self.choose(&up, needed), None),
                None => return Routed::to_primary(primary),
            },
        };
        if waiting.is_empty() {
            return Routed::to_primary(primary);
        }
        let started = Instant::now();
        let Ok(mut conn) = standby.pool.get_timeout(self.wait) else {
            standby.seen_down();
            primary.extend(waiting.into_iter().map(|(_, job)| job));
            return Routed::to_primary(primary);
        };
        let (ready, late) = match until_replayed(&mut conn, waiting, floor, started + self.wait) {
            Ok(split) => split,
            Err(waiting) => {
                standby.seen_down();
                primary.extend(waiting);
                return Routed::to_primary(primary);
            }
        };
        standby
            .reads
            .fetch_add(ready.len() as u64, Ordering::Relaxed);
        primary.extend(late);
        Routed {
            standby: Some((conn, ready)),
            primary,
        }
    }

    /// Counts reads the primary served.
    pub(super) fn served_by_primary(&self, reads: usize) {
        self.primary_reads
            .fetch_add(reads as u64, Ordering::Relaxed);
    }

    /// The position a standby must have replayed to serve `job`, if known without asking
    /// the primary: a token's; or, for a read of the latest state or of a staleness, a
    /// position asked no earlier than that long before it was queued (a commit's, a
    /// probe's, another burst's: under writes, most reads of the latest state find one).
    /// `None`: the primary must be asked, after the job was queued.
    fn known_requirement(&self, job: &ReadJob) -> Option<Position> {
        match job.freshness {
            Freshness::Since(position) => Some(position),
            Freshness::Latest => self.position_since(job.queued, Duration::ZERO),
            Freshness::Within(bound) => self.position_since(job.queued, bound),
            Freshness::Primary => None,
        }
    }

    /// The earliest position the primary was asked at no earlier than `bound` before
    /// `queued`: every write acknowledged before then is at or before it.
    fn position_since(&self, queued: Instant, bound: Duration) -> Option<Position> {
        let samples = lock(&self.samples);
        let first = match queued.checked_sub(bound) {
            Some(since) => samples.partition_point(|sample| sample.asked < since),
            None => 0,
        };
        samples.get(first).map(|sample| sample.position)
    }

    /// Asks the primary where it is, and keeps the answer; `None` when it cannot say. Bursts
    /// ask through [`Self::question`], one question at a time.
    fn ask_primary(&self, store: &PgStore) -> Option<Position> {
        let mut conn = store.pool.get().ok()?;
        let asked = Instant::now();
        let timeline = conn.timeline;
        let position = primary_position(&mut conn.conn, timeline).ok()?;
        self.keep(asked, position);
        Some(position)
    }

    fn keep(&self, asked: Instant, position: Position) {
        let mut samples = lock(&self.samples);
        if samples
            .back()
            .is_some_and(|last| asked < last.asked + SAMPLE_SPACING)
        {
            return;
        }
        samples.push_back(Sample { asked, position });
        while samples
            .front()
            .is_some_and(|first| first.asked + SAMPLES_KEPT < asked)
        {
            samples.pop_front();
        }
    }

    /// The standbys whose last probe, recent enough, found them replaying this primary.
    fn standbys_up(&self) -> Vec<&Standby> {
        self.standbys
            .iter()
            .filter(|standby| standby.replayed().is_some())
            .collect()
    }

    /// Of `up`, in round-robin order, the first that has replayed `needed` when last
    /// probed, or else the one furthest along on its timeline.
    fn choose<'r>(&self, up: &[&'r Standby], needed: Position) -> &'r Standby {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let in_turn = (0..up.len()).map(|i| up[(start + i) % up.len()]);
        let mut furthest = up[start % up.len()];
        for standby in in_turn {
            match standby.replayed() {
                Some(replayed) if reaches(replayed, needed) => return standby,
                Some(replayed)
                    if replayed.timeline == needed.timeline
                        && furthest.replayed().is_none_or(|best| {
                            best.timeline != needed.timeline || best < replayed
                        }) =>
                {
                    furthest = standby;
                }
                _ => {}
            }
        }
        furthest
    }

    /// What each server served, and each standby's lag behind the primary's last known
    /// position.
    pub(super) fn stats(&self) -> Vec<ServerReads> {
        let primary = lock(&self.samples).back().map(|sample| sample.position);
        let mut stats = vec![ServerReads {
            server: "primary".into(),
            reads: self.primary_reads.load(Ordering::Relaxed),
            up: None,
            synchronous: None,
            lag_bytes: None,
        }];
        stats.extend(self.standbys.iter().map(|standby| {
            let replayed = standby.replayed();
            ServerReads {
                server: standby.name.clone(),
                reads: standby.reads.load(Ordering::Relaxed),
                up: Some(replayed.is_some()),
                synchronous: Some(replayed.is_some() && standby.sync.is_synchronous()),
                lag_bytes: match (primary, replayed) {
                    (Some(primary), Some(replayed)) if primary.timeline == replayed.timeline => {
                        Some(primary.lsn.saturating_sub(replayed.lsn))
                    }
                    _ => None,
                },
            }
        }));
        stats
    }
}

mod commits;
mod positions;
mod probe;
mod question;
mod standby;
mod synchronous;
#[cfg(test)]
mod tests;

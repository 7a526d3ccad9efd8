//! The probes: a thread asking the primary where it is, and one per standby asking how far
//! it has replayed, each every [`PROBE_EVERY`]. What they see decides which standbys a burst
//! of reads may go to (`replicas.rs`) and what `/metrics` says of them.

use std::sync::Weak;
use std::time::Instant;

use diesel::RunQueryDsl;
use diesel::dsl::sql;
use diesel::sql_types::Text;

use super::positions::{primary_position, replayed_on};
use super::{PROBE_EVERY, Replicas, lock};
use crate::postgres::connection::PgPool;

/// The cluster's identity: a standby of this primary has the same.
const SYSTEM: &str = "(SELECT system_identifier FROM pg_control_system())::text";

/// Asks the primary where it is every [`PROBE_EVERY`], for staleness reads and the
/// standbys' lag; and its cluster's identity, until it is known (a promotion keeps it).
pub(super) fn primary(replicas: &Weak<Replicas>, primary: &PgPool) {
    loop {
        let Some(system_known) = replicas.upgrade().map(|this| this.system.get().is_some()) else {
            return;
        };
        let asked = Instant::now();
        let answer = primary.get().ok().and_then(|mut conn| {
            let timeline = conn.timeline;
            let position = primary_position(&mut conn.conn, timeline).ok()?;
            let system = if system_known {
                None
            } else {
                diesel::select(sql::<Text>(SYSTEM))
                    .get_result::<String>(&mut conn.conn)
                    .ok()
            };
            Some((position, system))
        });
        let Some(replicas) = replicas.upgrade() else {
            return;
        };
        if let Some((position, system)) = answer {
            replicas.keep(asked, position);
            if let Some(system) = system {
                let _ = replicas.system.set(system);
            }
        }
        drop(replicas);
        std::thread::sleep(PROBE_EVERY);
    }
}

/// Asks standby `index` how far it has replayed every [`PROBE_EVERY`]. It is up only while
/// it is a standby of the primary's cluster, receiving a timeline.
pub(super) fn standby(replicas: &Weak<Replicas>, index: usize) {
    let mut was_up = None;
    loop {
        let Some(this) = replicas.upgrade() else {
            return;
        };
        let Some(standby) = this.standbys.get(index) else {
            return;
        };
        let pool = standby.pool.clone();
        let primary_system = this.system.get().cloned();
        drop(this);
        let asked = Instant::now();
        let seen = pool.get().ok().and_then(|mut conn| {
            let system = diesel::select(sql::<Text>(SYSTEM))
                .get_result::<String>(&mut conn.conn)
                .ok()?;
            if primary_system.as_deref() != Some(system.as_str()) {
                return None;
            }
            replayed_on(&mut conn.conn).ok().flatten()
        });
        let Some(this) = replicas.upgrade() else {
            return;
        };
        if let Some(standby) = this.standbys.get(index) {
            *lock(&standby.seen) = Some((asked, seen));
            if was_up != Some(seen.is_some()) {
                match seen {
                    Some(at) => {
                        tracing::info!(server = %standby.name, replayed = %at, "read standby up")
                    }
                    None if primary_system.is_some() => tracing::warn!(
                        server = %standby.name,
                        "read standby down: unreachable, not a standby of this primary, or \
                         its WAL receiver not shown (the role needs pg_read_all_stats)"
                    ),
                    None => {}
                }
                was_up = Some(seen.is_some());
            }
        }
        drop(this);
        std::thread::sleep(PROBE_EVERY.saturating_sub(asked.elapsed()));
    }
}

//! Rolling upgrades across nodes (`docs/deployment.md`): which migrations a node runs at its
//! start and which only when the operator finishes the upgrade, and the nodes' heartbeats that
//! tell whether a node of an older version still serves.
//!
//! A migration that only adds runs at the first new node's start, and the old nodes go on
//! beside it. One that finishes an upgrade ([`finishes_an_upgrade`]: it may drop or change
//! what an older version uses) runs only through `petstore migrate --finish`, which refuses
//! while a node that does not know every migration of this version has been seen lately.

use std::time::Duration;

use diesel::backend::Backend;
use diesel::migration::{Migration, MigrationSource};
use diesel::prelude::*;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness};

use crate::error::StoreError;
use crate::ownership::finishes_an_upgrade;

/// How often a serving node says it is alive.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(10);

/// A node seen within this long is taken for alive: three missed heartbeats.
const ALIVE_WITHIN: Duration = Duration::from_secs(30);

/// The migrations of `all` a node runs at its start: those that only add.
#[derive(Clone, Copy)]
pub(crate) struct Additive<'m>(pub(crate) &'m EmbeddedMigrations);

/// The migrations of `all` that finish an upgrade: run by `migrate --finish` only.
#[derive(Clone, Copy)]
pub(crate) struct Finishing<'m>(pub(crate) &'m EmbeddedMigrations);

fn chosen<DB: Backend>(
    all: &EmbeddedMigrations,
    finishing: bool,
) -> diesel::migration::Result<Vec<Box<dyn Migration<DB>>>>
where
    EmbeddedMigrations: MigrationSource<DB>,
{
    Ok(MigrationSource::<DB>::migrations(all)?
        .into_iter()
        .filter(|migration| {
            finishes_an_upgrade(&migration.name().version().to_string()) == finishing
        })
        .collect())
}

impl<DB: Backend> MigrationSource<DB> for Additive<'_>
where
    EmbeddedMigrations: MigrationSource<DB>,
{
    fn migrations(&self) -> diesel::migration::Result<Vec<Box<dyn Migration<DB>>>> {
        chosen(self.0, false)
    }
}

impl<DB: Backend> MigrationSource<DB> for Finishing<'_>
where
    EmbeddedMigrations: MigrationSource<DB>,
{
    fn migrations(&self) -> diesel::migration::Result<Vec<Box<dyn Migration<DB>>>> {
        chosen(self.0, true)
    }
}

/// The newest additive migration of `all`: what a node of this version knows, as its
/// heartbeat says.
pub(crate) fn newest_additive<DB: Backend>(all: &EmbeddedMigrations) -> String
where
    EmbeddedMigrations: MigrationSource<DB>,
{
    chosen::<DB>(all, false)
        .unwrap_or_default()
        .iter()
        .map(|migration| migration.name().version().to_string())
        .max()
        .unwrap_or_default()
}

/// A node's heartbeat: alive now, knowing migrations up to `schema_version`; or gone (a
/// clean stop).
macro_rules! heartbeat {
    ($conn:expr, $node:expr, $schema_version:expr, $alive:expr) => {{
        use crate::schema::node_heartbeats::dsl;
        if $alive {
            let now = chrono::Utc::now().timestamp();
            diesel::insert_into(dsl::node_heartbeats)
                .values((
                    dsl::node.eq($node),
                    dsl::schema_version.eq($schema_version),
                    dsl::seen_at.eq(now),
                ))
                .on_conflict(dsl::node)
                .do_update()
                .set((
                    dsl::schema_version.eq($schema_version),
                    dsl::seen_at.eq(now),
                ))
                .execute($conn)
        } else {
            diesel::delete(dsl::node_heartbeats.filter(dsl::node.eq($node))).execute($conn)
        }
    }};
}

/// Writes `node`'s heartbeat on a SQLite connection (or removes it when not `alive`), with the
/// newest of `migrations` (this version's) it knows.
pub(crate) fn heartbeat_sqlite(
    conn: &mut SqliteConnection,
    migrations: &EmbeddedMigrations,
    node: &str,
    alive: bool,
) -> Result<(), StoreError> {
    let version = newest_additive::<diesel::sqlite::Sqlite>(migrations);
    heartbeat!(conn, node, &version, alive)?;
    Ok(())
}

/// Writes `node`'s heartbeat on a PostgreSQL connection (or removes it when not `alive`).
pub(crate) fn heartbeat_postgres(
    conn: &mut PgConnection,
    migrations: &EmbeddedMigrations,
    node: &str,
    alive: bool,
) -> Result<(), StoreError> {
    let version = newest_additive::<diesel::pg::Pg>(migrations);
    heartbeat!(conn, node, &version, alive)?;
    Ok(())
}

/// A node that does not know every migration of this version, seen lately.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OlderNode {
    /// Its name (`<host>:<port>/<pid>-<4 hex>`, as its `petstore listening` line says).
    pub node: String,
    /// The newest migration it knows.
    pub schema_version: String,
    /// Seconds since its last heartbeat.
    pub seen_seconds_ago: i64,
}

macro_rules! older_nodes {
    ($conn:expr, $newest:expr) => {{
        use crate::schema::node_heartbeats::dsl;
        let now = chrono::Utc::now().timestamp();
        let alive_since = now - i64::try_from(ALIVE_WITHIN.as_secs()).unwrap_or(0);
        dsl::node_heartbeats
            .filter(dsl::seen_at.ge(alive_since))
            .filter(dsl::schema_version.lt($newest))
            .select((dsl::node, dsl::schema_version, dsl::seen_at))
            .order(dsl::node)
            .load::<(String, String, i64)>($conn)
            .map(|rows| {
                rows.into_iter()
                    .map(|(node, schema_version, seen_at)| OlderNode {
                        node,
                        schema_version,
                        seen_seconds_ago: now - seen_at,
                    })
                    .collect::<Vec<_>>()
            })
    }};
}

/// What `migrate --finish` would do now: the finishing migrations it would run, and the nodes
/// that would hold it back (`--finish --dry-run`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FinishPlan {
    /// The versions of the finishing migrations not applied yet.
    pub pending: Vec<String>,
    /// The nodes seen lately that know fewer migrations: the finish waits for them.
    pub older: Vec<OlderNode>,
}

macro_rules! finish_plan {
    ($conn:expr, $migrations:expr, $backend:ty) => {{
        let newest = newest_additive::<$backend>($migrations);
        let older = older_nodes!($conn, &newest)?;
        let pending = $conn
            .pending_migrations(Finishing($migrations))
            .map_err(|e| StoreError::Migration(e.to_string()))?
            .iter()
            .map(|migration| migration.name().version().to_string())
            .collect();
        Ok(FinishPlan { pending, older })
    }};
}

/// [`FinishPlan`] on a SQLite connection; changes nothing.
pub(crate) fn plan_sqlite(
    conn: &mut SqliteConnection,
    migrations: &EmbeddedMigrations,
) -> Result<FinishPlan, StoreError> {
    finish_plan!(conn, migrations, diesel::sqlite::Sqlite)
}

/// [`FinishPlan`] on a PostgreSQL connection; changes nothing.
pub(crate) fn plan_postgres(
    conn: &mut PgConnection,
    migrations: &EmbeddedMigrations,
) -> Result<FinishPlan, StoreError> {
    finish_plan!(conn, migrations, diesel::pg::Pg)
}

/// Refuses the finish while `older` nodes serve, unless `force`.
fn refuse_while(older: Vec<OlderNode>, force: bool) -> Result<(), StoreError> {
    if older.is_empty() || force {
        return Ok(());
    }
    Err(StoreError::OlderNodesAlive {
        nodes: older
            .iter()
            .map(|old| {
                format!(
                    "{} (knows migrations up to {}, seen {} s ago)",
                    old.node, old.schema_version, old.seen_seconds_ago
                )
            })
            .collect(),
    })
}

/// The finishing migrations of `migrations` run on a SQLite connection, once no older node
/// serves (or `force`). The versions applied.
pub(crate) fn finish_sqlite(
    conn: &mut SqliteConnection,
    migrations: &EmbeddedMigrations,
    force: bool,
) -> Result<Vec<String>, StoreError> {
    let newest = newest_additive::<diesel::sqlite::Sqlite>(migrations);
    refuse_while(older_nodes!(conn, &newest)?, force)?;
    conn.run_pending_migrations(Finishing(migrations))
        .map(|versions| versions.iter().map(ToString::to_string).collect())
        .map_err(|e| StoreError::Migration(e.to_string()))
}

/// The same on a PostgreSQL connection (its caller holds the migration lock).
pub(crate) fn finish_postgres(
    conn: &mut PgConnection,
    migrations: &EmbeddedMigrations,
    force: bool,
) -> Result<Vec<String>, StoreError> {
    let newest = newest_additive::<diesel::pg::Pg>(migrations);
    refuse_while(older_nodes!(conn, &newest)?, force)?;
    conn.run_pending_migrations(Finishing(migrations))
        .map(|versions| versions.iter().map(ToString::to_string).collect())
        .map_err(|e| StoreError::Migration(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_runs_the_additive_migrations_and_the_finishing_ones_wait() {
        let additive = chosen::<diesel::sqlite::Sqlite>(&crate::sqlite::MIGRATIONS, false)
            .map(|all| all.len())
            .unwrap_or_default();
        let finishing = chosen::<diesel::sqlite::Sqlite>(&crate::sqlite::MIGRATIONS, true)
            .map(|all| all.len())
            .unwrap_or_default();
        let all = crate::ownership::versions::<diesel::sqlite::Sqlite>(&crate::sqlite::MIGRATIONS)
            .map(|all| all.len())
            .unwrap_or_default();
        assert!(additive > 0);
        assert_eq!(additive + finishing, all);
        let newest =
            crate::ownership::versions::<diesel::sqlite::Sqlite>(&crate::sqlite::MIGRATIONS)
                .unwrap_or_default()
                .into_iter()
                .filter(|version| !finishes_an_upgrade(version))
                .max();
        assert_eq!(
            Some(newest_additive::<diesel::sqlite::Sqlite>(
                &crate::sqlite::MIGRATIONS
            )),
            newest
        );
    }
}

//! [`check`]: whether a database is sound, as the backend and as the service sees it.

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};

use crate::config::StoreConfig;
use crate::error::StoreError;
use crate::ownership::{Found, finishes_an_upgrade};
use crate::transfer::{Conn, id_position, id_tables, max_id, on_backend};

/// Violations listed per kind, at most; a last line says how many more there are.
const MAX_LISTED: usize = 20;

/// Checks the database of `config` and returns one line per violation (none: all hold):
///
/// - SQLite's own `integrity_check` and `foreign_key_check` (PostgreSQL's own checks,
///   `amcheck` and data checksums, are the server's to run);
/// - every migration of this version applied;
/// - the service's invariants: no stock below zero; each pet's count of open orders is its
///   open orders, and its committed units theirs; once the stock ledger has begun, each pet's
///   stock and committed units are its ledger's sums, each movement's balances are the sums
///   up to it (so none is negative), and a deleted pet's ledger ends at nothing; every open
///   order names a pet that exists (a complete order may outlive
///   its pet); every order's owner is a key that exists; each table's id sequence is at or
///   past its largest id, so ids only grow (the next event's id is above every one stored);
///   no webhook is marked delivered past the last event.
///
/// The database must exist; nothing is written to it.
pub fn check(config: &StoreConfig) -> Result<Vec<String>, StoreError> {
    let pending = match crate::store::inspect(config)? {
        Found::Ours { pending, .. } => pending,
        // Nothing to check: said as every reading command says it (a mistyped path, or an
        // empty database).
        Found::New => return Err(crate::ownership::nothing_there(&config.database)),
    };
    let (mut conn, untouched) = Conn::to_existing(config)?;
    let mut found = Vec::new();
    if let Conn::Sqlite(c) = &mut conn {
        found.extend(sqlite_integrity(c)?);
    }
    // A migration that finishes an upgrade waits for `migrate --finish`: that is no fault.
    for migration in pending.iter().filter(|v| !finishes_an_upgrade(v)) {
        found.push(format!("migration {migration} is not applied"));
    }
    if found.is_empty() {
        // The invariants read the current schema: only worth asking once it is there.
        found.extend(invariants(&mut conn)?);
    }
    untouched.confirm(&config.database)?;
    Ok(found)
}

#[derive(QueryableByName)]
struct Said {
    #[diesel(sql_type = Text)]
    line: String,
}

fn sqlite_integrity(conn: &mut diesel::SqliteConnection) -> Result<Vec<String>, StoreError> {
    conn.batch_execute("PRAGMA query_only = ON;")?;
    let mut found: Vec<String> = diesel::sql_query(
        "SELECT integrity_check AS line FROM pragma_integrity_check() WHERE integrity_check <> 'ok'",
    )
    .load::<Said>(conn)?
    .into_iter()
    .map(|said| format!("integrity: {}", said.line))
    .collect();
    found.extend(
        diesel::sql_query(
            "SELECT 'foreign key: ' || \"table\" || ' row ' || COALESCE(rowid, 0) \
             || ' names a missing row of ' || parent AS line FROM pragma_foreign_key_check()",
        )
        .load::<Said>(conn)?
        .into_iter()
        .map(|said| said.line),
    );
    Ok(found)
}

/// One invariant: a query listing what breaks it, and how to say each.
struct Invariant {
    sql: &'static str,
    say: fn(i64, i64) -> String,
}

#[derive(QueryableByName)]
struct Breach {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = BigInt)]
    value: i64,
}

/// The same SQL serves both backends (`complete = FALSE` reads a SQLite 0 and a PostgreSQL
/// `false` alike).
const INVARIANTS: [Invariant; 14] = [
    Invariant {
        sql: "SELECT id, stock AS value FROM pets WHERE stock < 0 ORDER BY id",
        say: |id, stock| format!("pet {id}: stock {stock} is below zero"),
    },
    Invariant {
        sql: "SELECT p.id, p.open_orders AS value FROM pets p WHERE p.open_orders <> \
              (SELECT COUNT(*) FROM orders o WHERE o.pet_id = p.id AND o.complete = FALSE) + \
              (SELECT COUNT(*) FROM order_lines l JOIN orders o ON o.id = l.order_id \
              WHERE l.pet_id = p.id AND o.complete = FALSE) ORDER BY p.id",
        say: |id, counted| {
            format!("pet {id}: counts {counted} open orders, which is not how many it has")
        },
    },
    Invariant {
        sql: "SELECT p.id, p.committed AS value FROM pets p WHERE p.committed <> \
              (SELECT COALESCE(SUM(o.quantity), 0) FROM orders o WHERE o.pet_id = p.id \
              AND o.complete = FALSE) + (SELECT COALESCE(SUM(l.quantity), 0) FROM order_lines l \
              JOIN orders o ON o.id = l.order_id WHERE l.pet_id = p.id AND o.complete = FALSE) \
              ORDER BY p.id",
        say: |id, units| {
            format!("pet {id}: counts {units} units in open orders, which is not what they hold")
        },
    },
    Invariant {
        sql: "SELECT p.id, p.held AS value FROM pets p WHERE p.held <> \
              (SELECT COALESCE(SUM(l.quantity), 0) FROM hold_lines l JOIN holds h \
              ON h.id = l.hold_id WHERE l.pet_id = p.id AND h.ended IS NULL) ORDER BY p.id",
        say: |id, units| {
            format!("pet {id}: counts {units} units held, which is not what its holds hold")
        },
    },
    Invariant {
        sql: "SELECT p.id, p.held AS value FROM pets p WHERE EXISTS (SELECT 1 FROM \
              ledger_opened) AND p.held <> (SELECT COALESCE(SUM(m.held_change), 0) \
              FROM stock_movements m WHERE m.pet_id = p.id) ORDER BY p.id",
        say: |id, units| format!("pet {id}: {units} units held is not the sum of its ledger"),
    },
    Invariant {
        sql: "SELECT p.id, p.stock AS value FROM pets p WHERE EXISTS (SELECT 1 FROM \
              ledger_opened) AND p.stock <> (SELECT COALESCE(SUM(m.available_change), 0) \
              FROM stock_movements m WHERE m.pet_id = p.id) ORDER BY p.id",
        say: |id, stock| format!("pet {id}: stock {stock} is not the sum of its ledger"),
    },
    Invariant {
        sql: "SELECT p.id, p.committed AS value FROM pets p WHERE EXISTS (SELECT 1 FROM \
              ledger_opened) AND p.committed <> (SELECT COALESCE(SUM(m.committed_change), 0) \
              FROM stock_movements m WHERE m.pet_id = p.id) ORDER BY p.id",
        say: |id, units| {
            format!("pet {id}: {units} units in open orders is not the sum of its ledger")
        },
    },
    Invariant {
        sql: "SELECT t.id, t.available_after AS value FROM (SELECT m.id, m.available_after, \
              m.held_after, m.committed_after, SUM(m.available_change) OVER w AS available, \
              SUM(m.held_change) OVER w AS held, SUM(m.committed_change) OVER w AS committed \
              FROM stock_movements m WINDOW w AS (PARTITION BY m.pet_id ORDER BY m.id)) t \
              WHERE t.available <> t.available_after OR t.held <> t.held_after \
              OR t.committed <> t.committed_after ORDER BY t.id",
        say: |id, after| {
            format!(
                "stock movement {id}: leaves {after} units available (or its other balances), \
                 which is not its ledger's sum up to it"
            )
        },
    },
    Invariant {
        sql: "SELECT m.pet_id AS id, CAST(SUM(m.available_change) AS BIGINT) AS value \
              FROM stock_movements m WHERE NOT EXISTS (SELECT 1 FROM pets p \
              WHERE p.id = m.pet_id) GROUP BY m.pet_id HAVING SUM(m.available_change) <> 0 \
              OR SUM(m.held_change) <> 0 OR SUM(m.committed_change) <> 0 ORDER BY m.pet_id",
        say: |id, units| format!("pet {id}: deleted, its ledger still holds {units} units"),
    },
    Invariant {
        sql: "SELECT o.id, o.pet_id AS value FROM orders o WHERE o.complete = FALSE \
              AND NOT EXISTS (SELECT 1 FROM pets p WHERE p.id = o.pet_id) ORDER BY o.id",
        say: |id, pet| format!("order {id}: open for pet {pet}, which does not exist"),
    },
    Invariant {
        sql: "SELECT o.id, o.owner_id AS value FROM orders o WHERE o.owner_id IS NOT NULL \
              AND NOT EXISTS (SELECT 1 FROM api_keys k WHERE k.id = o.owner_id) ORDER BY o.id",
        say: |id, key| format!("order {id}: owned by key {key}, which does not exist"),
    },
    Invariant {
        sql: "SELECT p.id, p.price_amount AS value FROM pets p WHERE p.price_currency IS NOT \
              NULL AND p.price_currency <> COALESCE((SELECT s.currency FROM shop s), '') \
              ORDER BY p.id",
        say: |id, amount| {
            format!("pet {id}: priced at {amount} minor units of another currency than the shop's")
        },
    },
    Invariant {
        sql: "SELECT o.id, o.unit_amount AS value FROM orders o WHERE o.currency IS NOT NULL \
              AND o.currency <> COALESCE((SELECT s.currency FROM shop s), '') ORDER BY o.id",
        say: |id, amount| {
            format!(
                "order {id}: priced at {amount} minor units of another currency than the shop's"
            )
        },
    },
    Invariant {
        sql: "SELECT w.id, w.delivered_through AS value FROM webhooks w WHERE \
              w.delivered_through > (SELECT COALESCE(MAX(e.id), 0) FROM events e) ORDER BY w.id",
        say: |id, through| {
            format!("webhook {id}: delivered through event {through}, past the last event")
        },
    },
];

fn invariants(conn: &mut Conn) -> Result<Vec<String>, StoreError> {
    let mut found = Vec::new();
    for invariant in &INVARIANTS {
        let sql = format!("{} LIMIT {}", invariant.sql, MAX_LISTED + 1);
        let breaches: Vec<Breach> = on_backend!(&mut *conn, |c| diesel::sql_query(&sql).load(c))?;
        for breach in breaches.iter().take(MAX_LISTED) {
            found.push((invariant.say)(breach.id, breach.value));
        }
        if breaches.len() > MAX_LISTED {
            found.push(format!(
                "… and more like the line above ({})",
                invariant.sql
            ));
        }
    }
    for table in id_tables() {
        let (position, largest) = (id_position(conn, table)?, max_id(conn, table)?);
        if position < largest {
            found.push(format!(
                "{table}: the next id would be {}, but ids up to {largest} exist: ids would not only grow",
                position + 1
            ));
        }
    }
    Ok(found)
}

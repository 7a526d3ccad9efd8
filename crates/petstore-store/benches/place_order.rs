//! Order placement through the store, next to a raw-SQL baseline, measured in the same run.
//!
//! `cargo bench -p petstore-store --bench place_order`
//!
//! - `store`: ``orders().place`` on `SqliteStore` (use case, rules, Diesel, pool).
//! - `raw_sql`: one connection with the same pragmas running the statements a careful hand
//!   would write for the same change, as plain SQL: read the pet's status, stock and open
//!   order count in one query, insert the order, update the stock, insert the two events,
//!   in one `BEGIN IMMEDIATE`.
//!
//! Both run at each durability (`synchronous=FULL`, then `NORMAL`) on their own file. The
//! figures that matter are the ratios printed at the end (store time / raw time): machines
//! here are shared, so absolute times move from run to run while ratios hold.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::Criterion;
use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use petstore_core::testkit::scenarios::Fixture;
use petstore_core::{Caller, NewOrder, PetId, Quantity};
use petstore_store::{Durability, SqliteStore, StoreConfig, connect};

const UNITS: u32 = 1_000_000;

fn config(dir: &Path, name: &str, durability: Durability) -> StoreConfig {
    let mut config = StoreConfig::new(dir.join(name));
    config.durability = durability;
    config
}

#[derive(QueryableByName)]
struct PetRow {
    #[diesel(sql_type = BigInt)]
    stock: i64,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = BigInt)]
    open_orders: i64,
}

#[derive(QueryableByName)]
struct Id {
    #[diesel(sql_type = BigInt)]
    id: i64,
}

/// The baseline: the same change as plain SQL on one connection, one transaction per order.
fn raw_place_order(conn: &mut SqliteConnection, pet: i64) {
    conn.batch_execute("BEGIN IMMEDIATE").unwrap();
    raw_order_statements(conn, pet);
    conn.batch_execute("COMMIT").unwrap();
}

/// Orders a raw batch holds: what 32 connections' worth of group commit could share at best.
const BATCH: usize = 32;

/// The ceiling of group commit: the same statements, [`BATCH`] orders per transaction and so
/// one `fsync` per batch.
fn raw_place_order_batch(conn: &mut SqliteConnection, pet: i64) {
    conn.batch_execute("BEGIN IMMEDIATE").unwrap();
    for _ in 0..BATCH {
        raw_order_statements(conn, pet);
    }
    conn.batch_execute("COMMIT").unwrap();
}

/// One order's statements: read the pet, insert the order, take the unit, record two events.
fn raw_order_statements(conn: &mut SqliteConnection, pet: i64) {
    let row = diesel::sql_query("SELECT stock, status, open_orders FROM pets WHERE id = ?")
        .bind::<BigInt, _>(pet)
        .get_result::<PetRow>(conn)
        .unwrap();
    assert!(row.stock > 0 && row.status == "available" && row.open_orders >= 0);
    let order = diesel::sql_query(
        "INSERT INTO orders (pet_id, quantity, ship_date, complete, owner_id) \
         VALUES (?, 1, NULL, 0, NULL) RETURNING id",
    )
    .bind::<BigInt, _>(pet)
    .get_result::<Id>(conn)
    .unwrap();
    diesel::sql_query("UPDATE pets SET stock = ? WHERE id = ?")
        .bind::<BigInt, _>(row.stock - 1)
        .bind::<BigInt, _>(pet)
        .execute(conn)
        .unwrap();
    let placed = format!(
        r#"{{"complete":false,"id":{},"petId":{pet},"quantity":1}}"#,
        order.id
    );
    let stock = format!(
        r#"{{"petId":{pet},"quantity":{},"status":"available"}}"#,
        row.stock - 1
    );
    diesel::sql_query(
        "INSERT INTO events (time, type, subject, data) VALUES \
         ('2026-11-22T00:00:00Z', 'order.placed', ?, ?), \
         ('2026-11-22T00:00:00Z', 'inventory.updated', ?, ?)",
    )
    .bind::<Text, _>(format!("store/orders/{}", order.id))
    .bind::<Text, _>(placed)
    .bind::<Text, _>(format!("inventory/{pet}"))
    .bind::<Text, _>(stock)
    .execute(conn)
    .unwrap();
}

fn output_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"))
        .join("criterion")
}

fn mean_ns(dir: &Path, group: &str, bench: &str) -> Option<f64> {
    let path = dir.join(group).join(bench).join("new/estimates.json");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    // Criterion reports the slope of its linear sampling when it has one, else the mean.
    let estimate = |name: &str| json[name]["point_estimate"].as_f64();
    estimate("slope").or_else(|| estimate("mean"))
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let out = output_dir();
    let mut criterion = Criterion::default()
        .output_directory(&out)
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .configure_from_args();

    let durabilities = [(Durability::Full, "full"), (Durability::Normal, "normal")];
    for (durability, label) in durabilities {
        let group_name = format!("place_order_{label}");
        let mut group = criterion.benchmark_group(&group_name);

        let store_config = config(dir.path(), &format!("store-{label}.db"), durability);
        let fixture = Fixture::new(SqliteStore::open(&store_config).unwrap());
        let pet = fixture.pet_with_stock("Rex", UNITS).id;
        group.bench_function("store", |b| {
            b.iter(|| {
                fixture
                    .shop
                    .orders()
                    .place(Caller::Operator, NewOrder::new(pet, Quantity::ONE), None)
                    .unwrap()
            })
        });

        let raw_config = config(dir.path(), &format!("raw-{label}.db"), durability);
        let raw_pet = {
            let fixture = Fixture::new(SqliteStore::open(&raw_config).unwrap());
            fixture.pet_with_stock("Rex", UNITS).id
        };
        let mut conn = connect(&raw_config).unwrap();
        group.bench_function("raw_sql", |b| {
            b.iter(|| raw_place_order(&mut conn, raw_pet.get()))
        });
        group.bench_function("raw_sql_batch32", |b| {
            b.iter(|| raw_place_order_batch(&mut conn, raw_pet.get()))
        });
        group.finish();
        assert_eq!(raw_pet, PetId::new(1).unwrap());
    }
    criterion.final_summary();

    let mut summary = serde_json::Map::new();
    println!("\nplace_order, store vs raw SQL (time per order; ratio = store / raw):");
    for (_, label) in durabilities {
        let group = format!("place_order_{label}");
        if let (Some(store), Some(raw), Some(batch)) = (
            mean_ns(&out, &group, "store"),
            mean_ns(&out, &group, "raw_sql"),
            mean_ns(&out, &group, "raw_sql_batch32"),
        ) {
            let ratio = store / raw;
            let raw_batched = batch / BATCH as f64;
            println!(
                "  synchronous={:<6}  store {:>9.1} µs   raw {:>9.1} µs   raw in batches of {BATCH} {:>7.1} µs   ratio {:.2}",
                label.to_uppercase(),
                store / 1e3,
                raw / 1e3,
                raw_batched / 1e3,
                ratio
            );
            summary.insert(
                label.to_owned(),
                serde_json::json!({
                    "store_ns": store,
                    "raw_ns": raw,
                    "raw_batched_ns": raw_batched,
                    "ratio": ratio,
                }),
            );
        }
    }
    let summary_path = out.join("place_order_summary.json");
    if std::fs::write(
        &summary_path,
        serde_json::Value::Object(summary).to_string(),
    )
    .is_ok()
    {
        println!("  written to {}", summary_path.display());
    }
}

//! Seeds a database for the load benchmarks: categories, pets with stock and a price (in the
//! shop's currency, which it settles), and a staff key, whose secret is the only thing printed
//! on standard output. The database is a SQLite file
//! or a PostgreSQL URL, as `--database` takes it.
//!
//! `cargo run --release -p petstore-http --example seed -- bench.db 100000`

use std::process::ExitCode;

use petstore_core::{
    Amount, Balances, Caller, CategoryId, Cause, Currency, Entry, KeySecret, MovementKind, Name,
    NewApiKey, NewCategory, NewMovement, NewPet, PetStatus, Price, Role, Service, Stock,
    StockChange, Store,
};
use petstore_store::{AnyStore, Database, Durability, StoreConfig};

const CATEGORIES: i64 = 20;
const BATCH: u32 = 5_000;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let database = args.next().unwrap_or_else(|| "bench.db".to_owned());
    let pets: u32 = args.next().and_then(|n| n.parse().ok()).unwrap_or(100_000);
    match seed(&database, pets) {
        Ok(secret) => {
            println!("{secret}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("seeding failed: {error}");
            ExitCode::FAILURE
        }
    }
}

fn seed(database: &str, pets: u32) -> Result<String, Box<dyn std::error::Error>> {
    let mut config = StoreConfig::for_database(Database::parse(database));
    // Seeding is setup, not what is measured: no fsync per batch (SQLite).
    config.durability = Durability::Normal;
    let store = AnyStore::open(&config)?;
    let currency = store.shop_currency(Currency::default())?;
    store.write(|tx| {
        for n in 0..CATEGORIES {
            tx.insert_category(&NewCategory::new(Name::parse(&format!("Kind {n}"))?))?;
        }
        Ok(())
    })?;
    let mut made = 0;
    while made < pets {
        let batch = BATCH.min(pets - made);
        store.write(|tx| {
            for n in made..made + batch {
                let category = CategoryId::new(i64::from(n) % CATEGORIES + 1)?;
                let pet = NewPet::new(Name::parse(&format!("Pet {n}"))?, category)
                    .with_status(PetStatus::Available);
                let pet = tx.insert_pet(&pet)?;
                let stock = Stock::from_level(1_000_000);
                tx.set_stock(pet.id, stock)?;
                // As a stock set through the API would: the ledger says where the units came from.
                let movement = NewMovement {
                    pet_id: pet.id,
                    change: StockChange::between(MovementKind::Set, Stock::ZERO, stock),
                    after: Balances {
                        available: stock,
                        ..Balances::default()
                    },
                    entry: Entry::default(),
                };
                tx.record_movements(chrono::Utc::now(), &Cause::default(), &[movement])?;
                let amount = Amount::new(100 + i64::from(n % 1000))?;
                tx.set_pet_price(pet.id, Some(Price { amount, currency }))?;
            }
            Ok(())
        })?;
        made += batch;
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    let secret = KeySecret::from_random(bytes);
    let shop = Service::new(store);
    let new = NewApiKey {
        name: Name::parse("load benchmark")?,
        role: Role::Staff,
    };
    shop.keys().create(Caller::Operator, new, &secret)?;
    Ok(secret.reveal().to_owned())
}

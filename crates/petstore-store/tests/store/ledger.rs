//! The stock ledger on real files and real PostgreSQL databases: it begins when an upgrade is
//! finished, with an opening movement per pet, records every change after it, and adds up;
//! `check` finds a stock that is not its ledger's sum, and a copy carries the ledger (or begins
//! it on what it copied, when the source's has not begun).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection, SqliteConnection};
use petstore_core::{
    Actor, Adjustment, AdjustmentUnits, Always, Amount, Caller, Cause, CheckoutLines, Currency,
    Movement, MovementKind, MovementQuery, Name, NewCategory, NewCheckout, NewLine, NewOrder,
    NewPet, OrderPatch, PageSize, PetId, Quantity, Reason, RequestId, Service, Stock,
};
use petstore_store::testing::ScratchPostgres;
use petstore_store::{AnyStore, Database, StoreConfig, check, copy, finish_upgrade};

const OPERATOR: Caller = Caller::Operator;

/// A fresh database of each kind available here.
fn databases(dir: &std::path::Path) -> Vec<(StoreConfig, Option<ScratchPostgres>)> {
    let mut all = vec![(StoreConfig::new(dir.join("shop.db")), None)];
    match ScratchPostgres::create() {
        Some(scratch) => all.push((scratch.config(), Some(scratch))),
        None => eprintln!("skipped the PostgreSQL half: PETSTORE_TEST_POSTGRES_URL is not set"),
    }
    all
}

/// Runs `sql` on the database as an operator's `sqlite3` or `psql` would.
fn run(config: &StoreConfig, sql: &str) -> diesel::QueryResult<()> {
    match &config.database {
        Database::Sqlite(file) => SqliteConnection::establish(file.to_str().unwrap())
            .unwrap()
            .batch_execute(sql),
        Database::Postgres(url) => PgConnection::establish(url).unwrap().batch_execute(sql),
    }
}

fn execute(config: &StoreConfig, sql: &str) {
    run(config, sql).unwrap();
}

/// A new database as a rolling upgrade leaves it before `migrate --finish`: this version's
/// additive migrations applied, the one that begins the ledger not (undone as its `down.sql`
/// and a reverted migration would).
fn mid_upgrade(config: &StoreConfig) -> AnyStore {
    let store = AnyStore::open(config).unwrap();
    store.shop_currency(Currency::default()).unwrap();
    execute(
        config,
        "DELETE FROM ledger_opened; DELETE FROM stock_movements; \
         DELETE FROM __diesel_schema_migrations WHERE version = '20261129900001'",
    );
    store
}

fn movements(shop: &Service<AnyStore>, pet: PetId) -> Vec<Movement> {
    let query = MovementQuery {
        pet_id: pet,
        after: None,
        limit: PageSize::new(100).unwrap(),
    };
    shop.inventory().movements(OPERATOR, &query).unwrap().items
}

/// What each movement says, in order: its kind and the balances after it.
fn story(movements: &[Movement]) -> Vec<(MovementKind, u32, u32)> {
    movements
        .iter()
        .map(|m| (m.kind, m.available_after.get(), m.committed_after.get()))
        .collect()
}

fn price(shop: &Service<AnyStore>, pet: PetId, amount: i64) {
    shop.prices()
        .set(OPERATOR, pet, Amount::new(amount).unwrap(), Always)
        .unwrap();
}

fn new_pet(shop: &Service<AnyStore>, name: &str, stock: u32) -> PetId {
    let dogs = match shop.categories().create(
        OPERATOR,
        NewCategory::new(Name::parse("Dogs").unwrap()),
        None,
    ) {
        Ok(outcome) => outcome.done().unwrap().id,
        Err(_) => {
            shop.categories()
                .list(&petstore_core::CategoryQuery::default())
                .unwrap()
                .items[0]
                .id
        }
    };
    let pet = shop
        .pets()
        .create(
            OPERATOR,
            NewPet::new(Name::parse(name).unwrap(), dogs),
            None,
        )
        .unwrap()
        .done()
        .unwrap();
    shop.inventory()
        .set_stock(OPERATOR, pet.id, Stock::from_level(stock), Always)
        .unwrap();
    pet.id
}

/// The schema is the ledger's second line: it refuses a movement of a kind it does not know
/// and one whose changes do not fit its kind, on both backends (SQLite checks the kind in the
/// same `CASE` as the changes: `000021_movement_kinds_by_case`).
#[test]
fn the_schema_refuses_an_unknown_kind_and_changes_that_do_not_fit_the_kind() {
    let dir = tempfile::tempdir().unwrap();
    for (config, _scratch) in databases(dir.path()) {
        drop(AnyStore::open(&config).unwrap());
        let movement = |kind: &str, available_change: i64| {
            format!(
                "INSERT INTO stock_movements (pet_id, kind, quantity, available_change, \
                 committed_change, available_after, committed_after, time) \
                 VALUES (1, '{kind}', 2, {available_change}, 0, 2, 0, '2026-11-30T00:00:00.000000Z')"
            )
        };
        assert!(
            run(&config, &movement("set", 2)).is_ok(),
            "a set of 2 units is a movement"
        );
        assert!(
            run(&config, &movement("stolen", 2)).is_err(),
            "no movement is stolen"
        );
        assert!(
            run(&config, &movement("set", 3)).is_err(),
            "a set of 2 changes 2 units"
        );
        assert!(
            run(&config, &movement("sold", 2)).is_err(),
            "a sale changes no available units"
        );
    }
}

#[test]
fn the_ledger_begins_when_the_upgrade_is_finished_and_adds_up() {
    let dir = tempfile::tempdir().unwrap();
    for (n, (config, _scratch)) in databases(dir.path()).into_iter().enumerate() {
        let shop = Service::new(mid_upgrade(&config)).with_cause(Cause {
            actor: Some(Actor::Operator),
            trace: None,
            request_id: RequestId::parse("req-7"),
        });
        // Before the finish, nodes of the older version may change stock beside this one:
        // nothing is recorded, and nothing is amiss.
        let rex = new_pet(&shop, "Rex", 5);
        let fido = new_pet(&shop, "Fido", 4);
        let order = shop
            .orders()
            .place(
                OPERATOR,
                NewOrder::new(rex, Quantity::new(2).unwrap()),
                None,
            )
            .unwrap()
            .done()
            .unwrap();
        assert!(movements(&shop, rex).is_empty(), "{}", config.database);
        assert_eq!(check(&config).unwrap(), Vec::<String>::new());

        // A copy of it begins the ledger on what it copied.
        let early = StoreConfig::new(dir.path().join(format!("early-{n}.db")));
        copy(&config, &early, &mut |_| {}).unwrap();
        let early_shop = Service::new(AnyStore::open(&early).unwrap());
        assert_eq!(
            story(&movements(&early_shop, rex)),
            [(MovementKind::Opening, 3, 2)]
        );
        assert_eq!(check(&early).unwrap(), Vec::<String>::new());

        // Nor is an order of several lines, which an older node would read as its first.
        price(&shop, rex, 250);
        price(&shop, fido, 100);
        let basket = |lines: &[(PetId, i64)]| NewCheckout {
            lines: CheckoutLines::new(
                lines
                    .iter()
                    .map(|&(pet_id, units)| NewLine {
                        pet_id,
                        quantity: Quantity::new(units).unwrap(),
                    })
                    .collect(),
            )
            .unwrap(),
            ship_date: None,
            expected_total: None,
        };
        let early_checkout = shop
            .orders()
            .checkout(OPERATOR, basket(&[(rex, 1), (fido, 1)]), None);
        assert_eq!(
            early_checkout.err().map(|e| e.code()),
            Some("upgrade_unfinished")
        );
        let single = shop
            .orders()
            .checkout(OPERATOR, basket(&[(fido, 1)]), None)
            .unwrap()
            .done()
            .unwrap();
        shop.orders().cancel(OPERATOR, single.id, Always).unwrap();

        let finished = finish_upgrade(&config, true).unwrap();
        assert_eq!(finished, ["20261129900001"], "{}", config.database);
        assert_eq!(
            story(&movements(&shop, rex)),
            [(MovementKind::Opening, 3, 2)]
        );

        // Every change after it is a movement, with who made it and the request's id.
        let adjustment = Adjustment {
            change: AdjustmentUnits::new(-1).unwrap(),
            reason: Reason::parse("one found lame").unwrap(),
            change_from_quantity: Some(Stock::from_level(3)),
        };
        shop.inventory()
            .adjust(OPERATOR, rex, adjustment, Always)
            .unwrap();
        let complete = OrderPatch {
            complete: Some(true),
            ..OrderPatch::default()
        };
        shop.orders()
            .update(OPERATOR, order.id, complete, Always)
            .unwrap();
        let second = shop
            .orders()
            .place(OPERATOR, NewOrder::new(rex, Quantity::ONE), None)
            .unwrap()
            .done()
            .unwrap();
        shop.orders().cancel(OPERATOR, second.id, Always).unwrap();
        shop.pets().delete(OPERATOR, fido, Always).unwrap();
        let basket_order = shop
            .orders()
            .checkout(OPERATOR, basket(&[(rex, 1)]), None)
            .unwrap()
            .done()
            .unwrap();
        shop.orders()
            .cancel(OPERATOR, basket_order.id, Always)
            .unwrap();
        let rex_moved = movements(&shop, rex);
        assert_eq!(
            story(&rex_moved),
            [
                (MovementKind::Opening, 3, 2),
                (MovementKind::Adjusted, 2, 2),
                (MovementKind::Sold, 2, 0),
                (MovementKind::Committed, 1, 1),
                (MovementKind::Released, 2, 0),
                (MovementKind::Committed, 1, 1),
                (MovementKind::Released, 2, 0),
            ],
            "{}",
            config.database
        );
        let adjusted = &rex_moved[1];
        assert_eq!(adjusted.reason.as_ref().unwrap().as_str(), "one found lame");
        assert_eq!(adjusted.actor, Some(Actor::Operator));
        assert_eq!(adjusted.request_id.as_ref().unwrap().as_str(), "req-7");
        assert_eq!(rex_moved[2].order_id, Some(order.id));
        assert_eq!(rex_moved[2].line_no, Some(1));
        assert_eq!(
            story(&movements(&shop, fido)),
            [
                (MovementKind::Opening, 4, 0),
                (MovementKind::WrittenOff, 0, 0)
            ],
            "a deleted pet keeps its ledger"
        );
        // Now the ledger has begun, a checkout of several lines goes through; a copy carries it.
        let dora = new_pet(&shop, "Dora", 2);
        price(&shop, dora, 300);
        let several = shop
            .orders()
            .checkout(OPERATOR, basket(&[(dora, 2), (rex, 1)]), None)
            .unwrap()
            .done()
            .unwrap();
        assert_eq!(several.lines.len(), 2);
        assert_eq!(several.total_amount.map(|t| t.get()), Some(850));
        assert_eq!(check(&config).unwrap(), Vec::<String>::new());

        // A copy carries the ledger as it is.
        let later = StoreConfig::new(dir.path().join(format!("later-{n}.db")));
        copy(&config, &later, &mut |_| {}).unwrap();
        let later_shop = Service::new(AnyStore::open(&later).unwrap());
        assert_eq!(
            &movements(&later_shop, rex)[..rex_moved.len()],
            &rex_moved[..]
        );
        assert_eq!(
            later_shop.orders().get(OPERATOR, several.id).unwrap(),
            several,
            "a copy carries every line"
        );
        assert_eq!(check(&later).unwrap(), Vec::<String>::new());

        // A stock changed behind the ledger's back is found.
        execute(
            &config,
            &format!("UPDATE pets SET stock = stock + 1 WHERE id = {rex}"),
        );
        let found = check(&config).unwrap();
        assert!(
            found
                .iter()
                .any(|line| line == &format!("pet {rex}: stock 2 is not the sum of its ledger")),
            "{found:?}"
        );
    }
}

//! The shop's currency and pets' prices on real files and real PostgreSQL databases: the
//! currency is chosen once and kept, `check` names a price in another, and a copy carries
//! both.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use petstore_core::{
    Always, Amount, Currency, Name, NewCategory, NewPet, Price, Service, Settings, Store,
};
use petstore_store::testing::ScratchPostgres;
use petstore_store::{AnyStore, StoreConfig, StoreError, check, copy};

/// A fresh database of each kind available here.
fn databases(dir: &std::path::Path) -> Vec<(StoreConfig, Option<ScratchPostgres>)> {
    let mut all = vec![(StoreConfig::new(dir.join("shop.db")), None)];
    match ScratchPostgres::create() {
        Some(scratch) => all.push((scratch.config(), Some(scratch))),
        None => eprintln!("skipped the PostgreSQL half: PETSTORE_TEST_POSTGRES_URL is not set"),
    }
    all
}

fn currency(code: &str) -> Currency {
    Currency::parse(code).unwrap()
}

/// A shop over `store` pricing in `currency`, with one more pet, in a category of its own
/// named `kind`, priced at `amount`.
fn priced_pet(store: AnyStore, currency: Currency, kind: &str, amount: i64) -> Service<AnyStore> {
    let shop = Service::new(store).with_settings(Settings {
        currency,
        ..Settings::default()
    });
    let dogs = shop
        .categories()
        .create(
            petstore_core::Caller::Operator,
            NewCategory::new(Name::parse(kind).unwrap()),
            None,
        )
        .unwrap()
        .done()
        .unwrap();
    let rex = shop
        .pets()
        .create(
            petstore_core::Caller::Operator,
            NewPet::new(Name::parse("Rex").unwrap(), dogs.id),
            None,
        )
        .unwrap()
        .done()
        .unwrap();
    shop.prices()
        .set(
            petstore_core::Caller::Operator,
            rex.id,
            Amount::new(amount).unwrap(),
            Always,
        )
        .unwrap();
    shop
}

#[test]
fn the_shop_keeps_the_currency_its_first_start_chose() {
    let dir = tempfile::tempdir().unwrap();
    for (config, _scratch) in databases(dir.path()) {
        let store = AnyStore::open(&config).unwrap();
        assert_eq!(
            store.shop_currency(currency("JPY")).unwrap(),
            currency("JPY")
        );
        assert_eq!(
            store.shop_currency(currency("JPY")).unwrap(),
            currency("JPY"),
            "the same currency again starts"
        );
        drop(store);

        let reopened = AnyStore::open(&config).unwrap();
        let refused = reopened.shop_currency(Currency::EUR).unwrap_err();
        assert!(
            matches!(refused, StoreError::CurrencyChanged { stored, wanted }
                if stored == currency("JPY") && wanted == Currency::EUR),
            "{refused:?}"
        );
        let said = refused.to_string();
        assert!(
            said.contains("JPY") && said.contains("--currency"),
            "{said}"
        );
        assert_eq!(
            reopened.shop_currency(currency("JPY")).unwrap(),
            currency("JPY"),
            "a refused start changed nothing"
        );
    }
}

#[test]
fn prices_survive_a_reopen_and_check_names_one_in_another_currency() {
    let dir = tempfile::tempdir().unwrap();
    for (config, _scratch) in databases(dir.path()) {
        let store = AnyStore::open(&config).unwrap();
        let kwd = store.shop_currency(currency("KWD")).unwrap();
        drop(priced_pet(store, kwd, "Dogs", 12_345));
        assert_eq!(check(&config).unwrap(), Vec::<String>::new());

        let reopened = AnyStore::open(&config).unwrap();
        let pet = reopened
            .read(|snapshot| snapshot.pets(&petstore_core::PetQuery::default()))
            .unwrap()
            .remove(0);
        let expected = Price {
            amount: Amount::new(12_345).unwrap(),
            currency: kwd,
        };
        assert_eq!(pet.price, Some(expected), "{}", config.database);
        drop(reopened);

        // A price written by hand in another currency than the shop's.
        let other = AnyStore::open(&config).unwrap();
        drop(priced_pet(other, Currency::EUR, "Cats", 500));
        let found = check(&config).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("pet 2: priced at 500 minor units of another currency"),
            "{found:?}"
        );
    }
}

#[test]
fn a_copy_carries_the_shop_currency_and_the_prices() {
    let dir = tempfile::tempdir().unwrap();
    let source = StoreConfig::new(dir.path().join("source.db"));
    let store = AnyStore::open(&source).unwrap();
    let chf = store.shop_currency(currency("CHF")).unwrap();
    let shop = priced_pet(store, chf, "Dogs", 4_990);
    let rex = petstore_core::PetId::new(1).unwrap();
    shop.inventory()
        .set_stock(
            petstore_core::Caller::Operator,
            rex,
            petstore_core::Stock::from_level(2),
            Always,
        )
        .unwrap();
    let placed = shop
        .orders()
        .place(
            petstore_core::Caller::Operator,
            petstore_core::NewOrder::new(rex, petstore_core::Quantity::new(2).unwrap()),
            None,
        )
        .unwrap()
        .done()
        .unwrap();
    assert_eq!(placed.total_amount.map(|total| total.get()), Some(9_980));
    drop(shop);
    let mut targets = vec![(StoreConfig::new(dir.path().join("target.db")), None)];
    if let Some(scratch) = ScratchPostgres::create() {
        targets.push((scratch.config(), Some(scratch)));
    }
    for (target, _scratch) in targets {
        let copied = copy(&source, &target, &mut |_| {}).unwrap();
        assert!(copied.0.contains(&("shop", 1)), "{copied:?}");
        assert_eq!(check(&target).unwrap(), Vec::<String>::new());
        let moved = AnyStore::open(&target).unwrap();
        let refused = moved.shop_currency(Currency::EUR);
        assert!(
            matches!(refused, Err(StoreError::CurrencyChanged { stored, .. }) if stored == chf),
            "the copy prices in the source's currency: {refused:?}"
        );
        let pets = moved
            .read(|snapshot| snapshot.pets(&petstore_core::PetQuery::default()))
            .unwrap();
        assert_eq!(
            pets[0].price.map(|price| price.amount.get()),
            Some(4_990),
            "{}",
            target.database
        );
        let orders = moved
            .read(|snapshot| snapshot.orders(&petstore_core::OrderQuery::default()))
            .unwrap();
        assert_eq!(
            orders,
            std::slice::from_ref(&placed),
            "the order keeps its price"
        );
    }
}

use super::connection::postgres_url;
use super::*;
use crate::config::Database;

#[test]
fn the_network_is_bounded_unless_the_url_says_otherwise() {
    let config = StoreConfig::for_database(Database::parse(
        "postgres://shop@db:5432/shop?sslmode=verify-full&connect_timeout=9",
    ));
    let url = postgres_url(&config).unwrap();
    assert!(url.starts_with("postgres://shop@db:5432/shop?sslmode=verify-full&connect_timeout=9&"));
    assert_eq!(
        url.matches("connect_timeout=").count(),
        1,
        "the URL's own wins: {url}"
    );
    for bound in [
        "keepalives_idle=10",
        "keepalives_count=3",
        "tcp_user_timeout=10000",
    ] {
        assert!(url.contains(bound), "{url}");
    }
    let bare = StoreConfig::for_database(Database::parse("postgres://shop@db/shop"));
    let url = postgres_url(&bare).unwrap();
    assert!(
        url.starts_with("postgres://shop@db/shop?connect_timeout="),
        "{url}"
    );
}

/// The statements each test thread's connections send, for tests of what a burst sends.
pub(crate) mod statements {
    use std::cell::RefCell;
    use std::sync::Once;

    use diesel::connection::{Instrumentation, InstrumentationEvent};

    thread_local! {
        static SENT: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    }

    fn recorder() -> Option<Box<dyn Instrumentation>> {
        Some(Box::new(|event: InstrumentationEvent<'_>| {
            if let InstrumentationEvent::StartQuery { query, .. } = event {
                let sql = query.to_string();
                SENT.with(|sent| sent.borrow_mut().push(sql));
            }
        }))
    }

    /// Records the statements that connections made from now on send, for the thread that
    /// sends them, and forgets this thread's earlier ones.
    pub(crate) fn record() {
        static INSTALLED: Once = Once::new();
        INSTALLED.call_once(|| diesel::connection::set_default_instrumentation(recorder).unwrap());
        SENT.with(|sent| sent.borrow_mut().clear());
    }

    /// The statements sent on this thread since the last call, leaving out the pool's check
    /// of a connection it lends (`connection.rs`).
    pub(crate) fn sent() -> Vec<String> {
        let sent = SENT.with(|sent| std::mem::take(&mut *sent.borrow_mut()));
        sent.into_iter()
            .filter(|sql| !sql.contains("pg_is_in_recovery"))
            .collect()
    }
}

/// A store on a scratch database holding `count` pets, each with a stock equal to its
/// position (1, 2, …), whose connections record what they send ([`statements`]); `None` (the
/// test is skipped) when no PostgreSQL server is configured.
pub(crate) fn store_with_pets(
    count: u32,
) -> Option<(
    crate::testing::ScratchPostgres,
    PgStore,
    Vec<petstore_core::PetId>,
)> {
    use petstore_core::{Name, NewCategory, NewPet, PetStatus, Stock};
    let database = crate::testing::ScratchPostgres::create()?;
    statements::record();
    let store = PgStore::open(&database.config()).unwrap();
    let pets = store
        .write(|tx| {
            let category = tx.insert_category(&NewCategory::new(Name::parse("Dogs").unwrap()))?;
            (1..=count)
                .map(|n| {
                    let pet = tx.insert_pet(&NewPet {
                        name: Name::parse(&format!("Rex {n}")).unwrap(),
                        category_id: category.id,
                        status: PetStatus::Available,
                    })?;
                    tx.set_stock(pet.id, Stock::from_level(n))?;
                    Ok(pet.id)
                })
                .collect()
        })
        .unwrap();
    Some((database, store, pets))
}

/// A write job naming `pet`, whose work runs `work` in a transaction and answers on `answer`.
pub(crate) fn pet_write<T: Send + 'static>(
    pet: petstore_core::PetId,
    answer: &std::sync::mpsc::Sender<RepoResult<T>>,
    mut work: impl FnMut(&mut dyn Transaction) -> RepoResult<T> + Send + 'static,
) -> crate::job::WriteJob {
    let answer = answer.clone();
    crate::job::WriteJob::new(
        Some(crate::Row::Pet(pet)),
        move |store: crate::job::JobStore<'_>| store.write(&mut work),
        move |result| answer.send(result).unwrap(),
    )
}

/// The stock of each of `pets`, read anew.
pub(crate) fn stock_of(store: &PgStore, pets: &[petstore_core::PetId]) -> Vec<u32> {
    pets.iter()
        .map(|&pet| {
            let item = store.read(|s| s.inventory_item(pet)).unwrap().unwrap();
            item.quantity.get()
        })
        .collect()
}

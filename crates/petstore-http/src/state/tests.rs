use super::*;
use petstore_core::{Caller, CategoryQuery, Name, NewCategory, SystemClock};
use petstore_store::StoreConfig;

/// The wake-up this layer hands the executor runs from a task behind the worker's ready
/// ones: a read and a write queued in one turn of the worker are both woken and answered.
#[actix_web::test]
async fn a_read_and_a_write_queued_in_one_turn_are_both_answered() {
    let dir = tempfile::tempdir().unwrap();
    let store = AnyStore::open(&StoreConfig::new(dir.path().join("wake.db"))).unwrap();
    let state = AppState::new(store, Arc::new(SystemClock)).unwrap();
    let write = state.write(|shop| {
        let new = NewCategory::new(Name::parse("Dogs")?);
        shop.categories().create(Caller::Operator, new, None)
    });
    let read = state.read(|shop| {
        shop.categories()
            .list(&CategoryQuery::default())
            .map(|page| page.items.len())
    });
    let both = futures_util::future::join(write, read);
    let (written, read) = actix_web::rt::time::timeout(std::time::Duration::from_secs(10), both)
        .await
        .expect("both were woken");
    assert!(written.is_ok(), "{written:?}");
    assert!(read.is_ok(), "{read:?}");
}

//! Idempotent creates: a retry with the same idempotency key gets the first answer back and
//! changes nothing.

use std::sync::{Barrier, Mutex};

use super::{Fixture, OPERATOR, code, customer, qty};
use crate::testkit::{Made, Must};
use crate::{
    Always, Caller, Clock, DomainError, IdempotencyKey, Idempotent, NewOrder, Order, OrderQuery,
    Outcome, PetStatus, RECORD_LIFETIME, Stock, Store,
};

/// An idempotency key for placing an order with `body`.
fn idempotency_key(key: &str, body: &str) -> IdempotencyKey {
    IdempotencyKey::new(key, "POST", "/v1/store/orders", body.as_bytes()).must("a valid key")
}

/// The answer recorded for an order: the order as JSON (opaque bytes to the store).
fn answer(order: &Order) -> Vec<u8> {
    serde_json::to_vec(order).must("an order as JSON")
}

/// Keeps every answer a create asked to record, so a scenario can see what was recorded.
#[derive(Debug, Default)]
struct Recorder(Mutex<Vec<Vec<u8>>>);

impl Recorder {
    fn record(&self, order: &Order) -> Vec<u8> {
        let bytes = answer(order);
        self.0.lock().must("the recorder").push(bytes.clone());
        bytes
    }

    /// The answers recorded since the last call.
    fn take(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut *self.0.lock().must("the recorder"))
    }
}

/// Places an order as `caller`, once per `key`, recording its answer through `recorder`.
fn place_once<S: Store>(
    f: &Fixture<S>,
    caller: Caller,
    new: NewOrder,
    key: &IdempotencyKey,
    recorder: &Recorder,
) -> Result<Outcome<Order>, DomainError> {
    let record = |order: &Order| recorder.record(order);
    let once = Idempotent {
        key: key.clone(),
        record: &record,
    };
    f.shop.orders().place(caller, new, Some(once))
}

/// A create sent again with the same idempotency key and request gets the first response and
/// changes nothing; another request under the same key is refused; other callers' keys are
/// theirs; a refused request records nothing; a record is forgotten after its lifetime.
pub fn idempotent_creates_replay_and_change_nothing<S: Store>(store: S) {
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 3);
    let new = NewOrder::new(rex.id, qty(1));
    let recorder = Recorder::default();
    let (alice, bob) = (customer(1), customer(2));
    let key = idempotency_key("order-1", "one unit");
    let first = place_once(&f, alice, new.clone(), &key, &recorder).made("first");
    let recorded = recorder.take();
    assert_eq!(recorded, vec![answer(&first)], "the first call's answer");
    let events = f.event_count();
    let again = place_once(&f, alice, new.clone(), &key, &recorder).must("retry");
    assert_eq!(
        again,
        Outcome::Replayed(recorded[0].clone()),
        "the same response"
    );
    assert!(recorder.take().is_empty(), "a replay makes no new answer");
    assert_eq!(f.event_count(), events, "the retry recorded nothing");
    assert_eq!(
        f.state_of(rex.id),
        (PetStatus::Available, 2),
        "one unit taken, once"
    );

    let other_body = idempotency_key("order-1", "two units");
    let reused = place_once(
        &f,
        alice,
        NewOrder::new(rex.id, qty(2)),
        &other_body,
        &recorder,
    );
    assert_eq!(reused.err(), Some(DomainError::IdempotencyKeyReused));

    let other_caller = idempotency_key("order-1", "one unit");
    let theirs = place_once(&f, bob, new.clone(), &other_caller, &recorder).made("theirs");
    assert_ne!(
        answer(&theirs),
        recorded[0],
        "another caller's key is another key"
    );

    let too_many = idempotency_key("order-2", "five units");
    let five = NewOrder::new(rex.id, qty(5));
    let refused = place_once(&f, alice, five.clone(), &too_many, &recorder);
    assert_eq!(code(refused), "insufficient_stock");
    f.shop
        .inventory()
        .set_stock(OPERATOR, rex.id, Stock::from_level(10), Always)
        .must("restock");
    let placed = place_once(&f, alice, five, &too_many, &recorder);
    assert!(
        matches!(
            placed.must("a refused request's retry runs again"),
            Outcome::Done(_)
        ),
        "a refused request's retry runs again"
    );

    f.clock
        .advance(RECORD_LIFETIME + chrono::Duration::seconds(1));
    let fresh = place_once(&f, alice, new, &key, &recorder).made("after the lifetime");
    assert_ne!(answer(&fresh), recorded[0], "a forgotten key starts afresh");

    // Nothing purged the expired record of "order-2" (five units): it counts as absent all
    // the same, so another request may take the key, and that one's answer replays now.
    let two = NewOrder::new(rex.id, qty(2));
    let other_request = idempotency_key("order-2", "two units");
    let taken = place_once(&f, alice, two.clone(), &other_request, &recorder)
        .made("another request once the record expired");
    let replayed = place_once(&f, alice, two, &other_request, &recorder);
    assert_eq!(
        replayed.must("its retry"),
        Outcome::Replayed(answer(&taken)),
        "the key's new record replays"
    );

    // The store's upkeep forgets what expired and keeps what is fresh.
    f.clock
        .advance(RECORD_LIFETIME - chrono::Duration::seconds(1));
    let now = f.clock.now();
    f.shop
        .store()
        .write(|tx| tx.purge_idempotency_records(now - RECORD_LIFETIME))
        .must("a purge");
    let kept = place_once(
        &f,
        alice,
        NewOrder::new(rex.id, qty(2)),
        &other_request,
        &recorder,
    );
    assert_eq!(
        kept.must("a retry after the purge"),
        Outcome::Replayed(answer(&taken)),
        "a purge keeps a record within its lifetime"
    );
}

/// 50 threads send one order with the same idempotency key at once: one order is placed and
/// all 50 get its response.
pub fn concurrent_retries_place_one_order<S: Store + Sync>(store: S) {
    const RACERS: usize = 50;
    let f = Fixture::new(store);
    let rex = f.pet_with_stock("Rex", 100);
    let alice = customer(1);
    let key = idempotency_key("flaky-network", "one unit");
    let recorder = Recorder::default();
    let start = Barrier::new(RACERS);
    let outcomes: Vec<Outcome<Order>> = std::thread::scope(|scope| {
        let racers: Vec<_> = (0..RACERS)
            .map(|_| {
                scope.spawn(|| {
                    start.wait();
                    place_once(&f, alice, NewOrder::new(rex.id, qty(1)), &key, &recorder)
                        .must("an idempotent order")
                })
            })
            .collect();
        racers
            .into_iter()
            .map(|racer| racer.join().unwrap_or_else(|_| panic!("a racer panicked")))
            .collect()
    });
    let ran = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Done(_)))
        .count();
    assert_eq!(ran, 1, "one request ran, the others replayed its answer");
    let recorded = recorder.take();
    assert_eq!(recorded.len(), 1, "one answer was recorded");
    let responses: Vec<Vec<u8>> = outcomes
        .into_iter()
        .map(|outcome| match outcome {
            Outcome::Done(order) => answer(&order),
            Outcome::Replayed(bytes) => bytes,
        })
        .collect();
    assert!(
        responses.iter().all(|r| *r == recorded[0]),
        "all got the same response"
    );
    assert_eq!(f.state_of(rex.id), (PetStatus::Available, 99));
    let orders = f
        .shop
        .orders()
        .list(OPERATOR, &OrderQuery::default())
        .must("list");
    assert_eq!(orders.items.len(), 1);
}

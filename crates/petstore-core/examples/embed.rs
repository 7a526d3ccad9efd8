//! Embedding the pet store's rules in another Rust program, with the in-memory store.
//!
//! Run with `cargo run -p petstore-core --example embed`.

use petstore_core::{
    Always, Amount, Caller, CheckoutLines, IdempotencyKey, Idempotent, InMemoryStore, KeyId, Name,
    NewCategory, NewCheckout, NewLine, NewPet, Order, OrderQuery, Outcome, Quantity, Role, Service,
    Stock, Total, ValidationError,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let shop = Service::new(InMemoryStore::new());

    // The program itself is the operator, which may do everything: it stocks the shop.
    let operator = Caller::Operator;
    let birds = NewCategory::new(Name::parse("Birds")?);
    let birds = made(shop.categories().create(operator, birds, None)?)?;
    let polly = NewPet::new(Name::parse("Polly")?, birds.id);
    let polly = made(shop.pets().create(operator, polly, None)?)?;
    shop.inventory()
        .set_stock(operator, polly.id, Stock::settable(3)?, Always)?;
    // Prices are integers of the currency's minor unit (cents: 24.99 EUR), never rounded.
    shop.prices()
        .set(operator, polly.id, Amount::new(2499)?, Always)?;

    let seed = NewPet::new(Name::parse("Millet")?, birds.id);
    let seed = made(shop.pets().create(operator, seed, None)?)?;
    shop.inventory()
        .set_stock(operator, seed.id, Stock::settable(10)?, Always)?;
    shop.prices()
        .set(operator, seed.id, Amount::new(350)?, Always)?;

    // A customer holding key 42 checks out two parrots and a bag of seed as one order, under
    // an idempotency key, so that a retry after a lost answer cannot order twice, and with the
    // total its basket showed, so that a price changed meanwhile refuses it. The answer kept
    // for retries is the order's JSON.
    let key_id = KeyId::new(42)?;
    let customer = Caller::key_holder(key_id, Role::Customer);
    let line = |pet_id, units| -> Result<NewLine, ValidationError> {
        Ok(NewLine {
            pet_id,
            quantity: Quantity::new(units)?,
        })
    };
    let basket = NewCheckout {
        lines: CheckoutLines::new(vec![line(polly.id, 2)?, line(seed.id, 1)?])?,
        ship_date: None,
        expected_total: Some(Total::new(2 * 2499 + 350)?),
    };
    let body = serde_json::to_vec(&basket)?;
    let path = "/v1/store/checkout";
    let key = IdempotencyKey::new("basket-1", "POST", path, &body)?;
    let record = |order: &Order| serde_json::to_vec(order).unwrap_or_default();
    let place = || {
        let once = Idempotent {
            key: key.clone(),
            record: &record,
        };
        shop.orders().checkout(customer, basket.clone(), Some(once))
    };
    let order = made(place()?)?;
    println!("placed order: {}", serde_json::to_string(&order)?);
    if let (Some(total), Some(currency)) = (order.total_amount, order.currency) {
        println!("to pay:       {}", currency.show(total.get()));
    }

    // The same request again: the recorded answer comes back and nothing changes.
    match place()? {
        Outcome::Replayed(answer) => println!("replayed:     {}", String::from_utf8(answer)?),
        Outcome::Done(again) => return Err(format!("ordered twice: {again:?}").into()),
    }
    let stock = shop.inventory().get(polly.id)?;
    println!("stock now:    {}", serde_json::to_string(&stock)?);

    // The customer sees its own orders: one.
    let mine = shop.orders().list(customer, &OrderQuery::default())?;
    println!("my orders:    {}", serde_json::to_string(&mine.items)?);
    Ok(())
}

/// What a create made: a first request always runs; only a retry replays.
fn made<T>(outcome: Outcome<T>) -> Result<T, &'static str> {
    outcome.done().ok_or("replayed where it should have run")
}

//! Embedding the pet store's rules in another Rust program, with the in-memory store.
//!
//! Run with `cargo run -p petstore-core --example embed`.

use petstore_core::{
    DomainError, InMemoryStore, Name, NewCategory, NewOrder, NewPet, OrderPatch, OrderScope,
    OwnerId, PageSize, Quantity, Service, Stock,
};

fn main() -> Result<(), DomainError> {
    let shop = Service::new(InMemoryStore::new());

    let birds = shop.create_category(NewCategory::new(Name::parse("Birds")?))?;
    let polly = shop.create_pet(NewPet::new(Name::parse("Polly")?, birds.id))?;
    shop.set_stock(polly.id, Stock::settable(3)?)?;

    // A customer (any positive id of the embedder's: here customer 42) orders two parrots.
    let customer = OwnerId::new(42)?;
    let order = shop.place_order(NewOrder::new(polly.id, Quantity::new(2)?), Some(customer))?;
    println!("placed order: {}", to_json(&order));
    println!(
        "stock now:    {}",
        to_json(&shop.get_inventory_item(polly.id)?)
    );

    // Asking for more than is left is refused by the rules, with the contract's error code.
    match shop.place_order(NewOrder::new(polly.id, Quantity::new(5)?), Some(customer)) {
        Err(refusal) => println!("refused:      {} ({refusal})", refusal.code()),
        Ok(order) => println!("unexpectedly placed: {}", to_json(&order)),
    }

    // Another customer cannot see the order.
    let stranger = OrderScope::OwnedBy(OwnerId::new(7)?);
    println!(
        "stranger:     {}",
        shop.get_order(order.id, stranger)
            .map_or_else(|e| e.code(), |_| "sees it")
    );

    let patch = OrderPatch {
        complete: Some(true),
        ..OrderPatch::default()
    };
    let done = shop.update_order(order.id, patch)?;
    println!("completed:    {}", to_json(&done));

    println!("events recorded:");
    for event in shop.events_after(None, PageSize::DEFAULT)? {
        println!(
            "  #{} {} {} {}",
            event.id, event.event_type, event.subject, event.data
        );
    }
    Ok(())
}

fn to_json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| format!("<unprintable: {e}>"))
}

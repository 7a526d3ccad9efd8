//! The JSON the API answers with: a resource's, or a page's items written one after the
//! other into one buffer.
//!
//! Types write themselves through serde, except the two that clients read most (a pet, an
//! inventory entry), which write their few fields directly. For those, serde_json's general
//! path (escaping each field's name, checking the buffer before each piece) cost more than
//! reading the rows from SQLite (docs/performance.md). They write exactly serde's bytes: the
//! tests compare the two for any value, so the representation has one definition, the
//! types' `Serialize`, and an `ETag` is the same whichever path made the bytes.

use petstore_core::{
    ApiKey, Category, DeliveryAttempt, Hold, InventoryItem, Movement, Order, Pet, PetPrice, Price,
    Webhook,
};
use serde::Serialize;

/// A type the API answers with, as a resource or in a page.
pub trait WriteJson: Serialize {
    /// Appends the item's JSON to `out`: the same bytes as `serde_json::to_writer`.
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        serde_json::to_writer(out, self)
    }
}

impl WriteJson for ApiKey {}
impl WriteJson for Category {}
impl WriteJson for DeliveryAttempt {}
impl WriteJson for Hold {}
impl WriteJson for Movement {}
impl WriteJson for Order {}
impl WriteJson for PetPrice {}
impl WriteJson for Webhook {}

// The tests of the answers' shapes use plain JSON values.
#[cfg(test)]
impl WriteJson for serde_json::Value {}

// Each writer takes its value apart field by field, with no `..`: a field added to the type is
// a compile error here until the writer writes it (and the property tests then check the
// bytes).
impl WriteJson for Pet {
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let Pet {
            id,
            name,
            category_id,
            status,
            price,
        } = self;
        let mut number = itoa::Buffer::new();
        out.extend_from_slice(b"{\"id\":");
        out.extend_from_slice(number.format(id.get()).as_bytes());
        out.extend_from_slice(b",\"name\":");
        // The one field that may need escaping: serde_json's own string writer does it.
        serde_json::to_writer(&mut *out, name.as_str())?;
        out.extend_from_slice(b",\"categoryId\":");
        out.extend_from_slice(number.format(category_id.get()).as_bytes());
        out.extend_from_slice(b",\"status\":\"");
        out.extend_from_slice(status.as_str().as_bytes());
        out.push(b'"');
        if let Some(Price { amount, currency }) = price {
            out.extend_from_slice(b",\"price\":{\"amount\":");
            out.extend_from_slice(number.format(amount.get()).as_bytes());
            // A currency is three capital letters: nothing to escape.
            out.extend_from_slice(b",\"currency\":\"");
            out.extend_from_slice(currency.code().as_bytes());
            out.extend_from_slice(b"\"}");
        }
        out.push(b'}');
        Ok(())
    }
}

impl WriteJson for InventoryItem {
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let InventoryItem {
            pet_id,
            quantity,
            status,
            held,
            committed,
        } = self;
        let mut number = itoa::Buffer::new();
        out.extend_from_slice(b"{\"petId\":");
        out.extend_from_slice(number.format(pet_id.get()).as_bytes());
        out.extend_from_slice(b",\"quantity\":");
        out.extend_from_slice(number.format(quantity.get()).as_bytes());
        out.extend_from_slice(b",\"status\":\"");
        out.extend_from_slice(status.as_str().as_bytes());
        out.extend_from_slice(b"\",\"held\":");
        out.extend_from_slice(number.format(held.get()).as_bytes());
        out.extend_from_slice(b",\"committed\":");
        out.extend_from_slice(number.format(committed.get()).as_bytes());
        out.push(b'}');
        Ok(())
    }
}

/// What the buffer of a page's JSON holds per item at first: more than an item of any list
/// but the events takes (a pet is about 70 bytes). serde_json's own buffer starts at 128 bytes
/// and doubles, copying what it holds each time: four times for a page of 20 pets.
const PAGE_ITEM_BYTES: usize = 128;

/// The JSON array of `items`, as serde_json would write it.
pub fn page_json<T: WriteJson>(items: &[T]) -> serde_json::Result<Vec<u8>> {
    let mut json = Vec::with_capacity(PAGE_ITEM_BYTES * items.len() + 2);
    json.push(b'[');
    for (n, item) in items.iter().enumerate() {
        if n > 0 {
            json.push(b',');
        }
        item.write_json(&mut json)?;
    }
    json.push(b']');
    Ok(json)
}

#[cfg(test)]
mod tests {
    use super::*;
    use petstore_core::{Amount, CategoryId, Currency, MAX_ID, Name, PetId, PetStatus, Stock};
    use proptest::prelude::*;

    fn status() -> impl Strategy<Value = PetStatus> {
        prop_oneof![
            Just(PetStatus::Available),
            Just(PetStatus::Pending),
            Just(PetStatus::Sold),
        ]
    }

    fn id() -> impl Strategy<Value = i64> {
        prop_oneof![Just(1), Just(MAX_ID), 1..=MAX_ID]
    }

    // Names with what JSON must escape (quotes, backslashes), what it must not (non-ASCII,
    // `/`, DEL), and anything else a name may hold.
    fn name() -> impl Strategy<Value = Name> {
        "[a-z\"\\\\/é€😀\u{7f} ]{0,20}[a-z\"\\\\é]"
            .prop_filter_map("a valid name", |text| Name::parse(&text).ok())
    }

    // No price, or one of any amount in the currencies of each minor unit.
    fn price() -> impl Strategy<Value = Option<Price>> {
        let amount = prop_oneof![Just(0), Just(Amount::MAX), 0..=Amount::MAX];
        let currency = prop_oneof![Just("EUR"), Just("JPY"), Just("KWD")];
        proptest::option::of((amount, currency)).prop_map(|price| {
            price.map(|(amount, code)| Price {
                amount: Amount::new(amount).unwrap(),
                currency: Currency::parse(code).unwrap(),
            })
        })
    }

    fn pet() -> impl Strategy<Value = Pet> {
        (id(), name(), id(), status(), price()).prop_map(|(id, name, category, status, price)| {
            Pet {
                id: PetId::new(id).unwrap(),
                name,
                category_id: CategoryId::new(category).unwrap(),
                status,
                price,
            }
        })
    }

    fn inventory_item() -> impl Strategy<Value = InventoryItem> {
        (id(), any::<u32>(), status(), any::<u32>(), any::<u32>()).prop_map(
            |(id, level, status, held, committed)| InventoryItem {
                pet_id: PetId::new(id).unwrap(),
                quantity: Stock::from_level(level),
                status,
                held: Stock::from_level(held),
                committed: Stock::from_level(committed),
            },
        )
    }

    fn written<T: WriteJson>(item: &T) -> Vec<u8> {
        let mut out = Vec::new();
        item.write_json(&mut out).unwrap();
        out
    }

    proptest! {
        #[test]
        fn a_pet_is_written_as_serde_writes_it(pet in pet()) {
            prop_assert_eq!(
                String::from_utf8(written(&pet)).unwrap(),
                serde_json::to_string(&pet).unwrap()
            );
        }

        #[test]
        fn an_inventory_entry_is_written_as_serde_writes_it(item in inventory_item()) {
            prop_assert_eq!(
                String::from_utf8(written(&item)).unwrap(),
                serde_json::to_string(&item).unwrap()
            );
        }

        #[test]
        fn a_page_is_the_array_serde_writes(pets in proptest::collection::vec(pet(), 0..5)) {
            prop_assert_eq!(
                String::from_utf8(page_json(&pets).unwrap()).unwrap(),
                serde_json::to_string(&pets).unwrap()
            );
        }
    }

    /// The types whose writer above is written by hand, each with a property test comparing
    /// it with serde (above).
    const WRITTEN_BY_HAND: [&str; 2] = ["Pet", "InventoryItem"];

    /// A writer written by hand must write serde's bytes: one added without its property test
    /// (and a name in [`WRITTEN_BY_HAND`]) fails here.
    #[test]
    fn every_writer_written_by_hand_has_its_serde_comparison() {
        let source = include_str!("json.rs");
        let by_hand: Vec<&str> = source
            .lines()
            .filter_map(|line| line.strip_prefix("impl WriteJson for "))
            .filter_map(|rest| rest.strip_suffix(" {"))
            .collect();
        assert_eq!(by_hand, WRITTEN_BY_HAND);
        let tests = source.split("mod tests").nth(1).unwrap_or_default();
        for (name, test) in [
            ("Pet", "fn a_pet_is_written_as_serde_writes_it"),
            (
                "InventoryItem",
                "fn an_inventory_entry_is_written_as_serde_writes_it",
            ),
        ] {
            assert!(WRITTEN_BY_HAND.contains(&name));
            assert!(tests.contains(test), "{name} has its property test");
        }
    }

    #[test]
    fn a_name_that_needs_escaping_is_escaped() {
        let pet = Pet {
            id: PetId::new(7).unwrap(),
            name: Name::parse(r#"Rex "the \ dog""#).unwrap(),
            category_id: CategoryId::new(2).unwrap(),
            status: PetStatus::Sold,
            price: None,
        };
        assert_eq!(
            String::from_utf8(written(&pet)).unwrap(),
            r#"{"id":7,"name":"Rex \"the \\ dog\"","categoryId":2,"status":"sold"}"#
        );
    }
}

use serde_json::json;

use super::*;
use crate::ids::{OrderId, OwnerId};
use crate::money::{Amount, Currency};
use crate::values::Quantity;

#[test]
fn new_pet_defaults_to_available_and_refuses_unknown_fields() {
    let pet: NewPet = serde_json::from_value(json!({"name": " Rex ", "categoryId": 1})).unwrap();
    assert_eq!(pet.status, PetStatus::Available);
    assert_eq!(pet.name.as_str(), "Rex");
    let with_id = json!({"id": 5, "name": "Rex", "categoryId": 1});
    assert!(serde_json::from_value::<NewPet>(with_id).is_err());
    assert!(serde_json::from_value::<NewPet>(json!({"name": "Rex"})).is_err());
    assert!(serde_json::from_value::<NewPet>(json!({"name": "", "categoryId": 1})).is_err());
    let bad_status = json!({"name": "Rex", "categoryId": 1, "status": "lost"});
    assert!(serde_json::from_value::<NewPet>(bad_status).is_err());
}

#[test]
fn pet_serializes_in_the_contract_shape() {
    let pet = Pet {
        id: PetId::new(3).unwrap(),
        name: Name::parse("Rex").unwrap(),
        category_id: CategoryId::new(1).unwrap(),
        status: PetStatus::Sold,
        price: None,
    };
    assert_eq!(
        serde_json::to_value(&pet).unwrap(),
        json!({"id": 3, "name": "Rex", "categoryId": 1, "status": "sold"})
    );
}

#[test]
fn order_hides_its_owner_and_omits_an_absent_ship_date() {
    let order = NewOrder::new(PetId::new(3).unwrap(), Quantity::new(2).unwrap()).into_order(
        OrderId::new(9).unwrap(),
        Some(OwnerId::new(77).unwrap()),
        None,
    );
    assert_eq!(
        serde_json::to_value(&order).unwrap(),
        json!({"id": 9, "petId": 3, "quantity": 2, "complete": false,
               "lines": [{"lineNo": 1, "petId": 3, "quantity": 2}]})
    );
}

#[test]
fn a_priced_order_shows_its_lines_amounts_and_total_in_its_currency() {
    let price = Price {
        amount: Amount::new(1999).unwrap(),
        currency: Currency::parse("JPY").unwrap(),
    };
    let order = NewOrder::new(PetId::new(3).unwrap(), Quantity::new(3).unwrap()).into_order(
        OrderId::new(9).unwrap(),
        None,
        Some(price),
    );
    assert_eq!(
        serde_json::to_value(&order).unwrap(),
        json!({"id": 9, "petId": 3, "quantity": 3, "complete": false,
               "lines": [{"lineNo": 1, "petId": 3, "quantity": 3, "unitAmount": 1999,
                          "amount": 5997}],
               "currency": "JPY", "totalAmount": 5997})
    );
    let read: Order = serde_json::from_value(serde_json::to_value(&order).unwrap()).unwrap();
    assert_eq!(read, order, "a client reads back what was written");
}

#[test]
fn new_order_defaults_to_one_unit_and_refuses_complete() {
    let order: NewOrder = serde_json::from_value(json!({"petId": 3})).unwrap();
    assert_eq!(order.quantity, Quantity::ONE);
    let dated: NewOrder =
        serde_json::from_value(json!({"petId": 3, "shipDate": "2026-11-22T11:00:00+01:00"}))
            .unwrap();
    assert_eq!(
        dated.ship_date.map(|d| d.to_rfc3339()),
        Some("2026-11-22T10:00:00+00:00".to_owned())
    );
    assert!(serde_json::from_value::<NewOrder>(json!({"petId": 3, "complete": true})).is_err());
    assert!(serde_json::from_value::<NewOrder>(json!({"petId": 3, "quantity": 0})).is_err());
}

#[test]
fn order_patch_tells_null_from_absent() {
    let clear: OrderPatch = serde_json::from_value(json!({"shipDate": null})).unwrap();
    assert_eq!(clear.ship_date, Some(None));
    let untouched: OrderPatch = serde_json::from_value(json!({"complete": true})).unwrap();
    assert_eq!(untouched.ship_date, None);
    assert_eq!(untouched.complete, Some(true));
    assert!(serde_json::from_value::<OrderPatch>(json!({"petId": 1})).is_err());
}

#[test]
fn inventory_update_bounds_the_level() {
    assert!(serde_json::from_value::<InventoryUpdate>(json!({"quantity": 0})).is_ok());
    assert!(serde_json::from_value::<InventoryUpdate>(json!({"quantity": 1_000_000})).is_ok());
    assert!(serde_json::from_value::<InventoryUpdate>(json!({"quantity": 1_000_001})).is_err());
    assert!(serde_json::from_value::<InventoryUpdate>(json!({"quantity": -1})).is_err());
    assert!(serde_json::from_value::<InventoryUpdate>(json!({})).is_err());
}

#[test]
fn status_parses_only_contract_spellings() {
    assert_eq!("pending".parse::<PetStatus>(), Ok(PetStatus::Pending));
    assert!("Pending".parse::<PetStatus>().is_err());
    assert!("".parse::<PetStatus>().is_err());
}

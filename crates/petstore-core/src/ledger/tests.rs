use super::*;

#[test]
fn every_kind_has_one_name() {
    for kind in MovementKind::ALL {
        assert_eq!(kind.as_str().parse::<MovementKind>().unwrap(), kind);
        assert_eq!(
            serde_json::to_value(kind).unwrap(),
            serde_json::json!(kind.as_str())
        );
    }
    assert!("bought".parse::<MovementKind>().is_err());
}

/// A change of `kind` moving `quantity` units as `(available, held, committed)` say.
fn change(
    kind: MovementKind,
    quantity: u32,
    (available, held, committed): (i64, i64, i64),
) -> StockChange {
    StockChange {
        kind,
        quantity,
        available,
        held,
        committed,
    }
}

#[test]
fn the_changes_of_each_kind_fit_it_and_no_other() {
    for kind in MovementKind::ALL {
        assert!(StockChange::of(kind, 3).fits(), "{kind}");
    }
    assert!(!change(MovementKind::Sold, 3, (-3, 0, 0)).fits());
    assert!(!change(MovementKind::Committed, 3, (-3, 0, 0)).fits());
    assert!(!change(MovementKind::Set, 3, (3, 0, 1)).fits());
    assert!(!change(MovementKind::Set, 3, (3, 1, 0)).fits());
    assert!(!change(MovementKind::Released, 2, (3, 0, -3)).fits());
    assert!(!change(MovementKind::Held, 2, (-2, 0, 2)).fits());
    assert!(!change(MovementKind::HoldExpired, 2, (2, 0, -2)).fits());
    assert!(!change(MovementKind::HoldCommitted, 2, (-2, 0, 2)).fits());
    assert!(!change(MovementKind::Opening, 2, (2, 1, 0)).fits());
    assert!(change(MovementKind::HoldCommitted, 2, (0, -2, 2)).fits());
    let down = StockChange::between(MovementKind::Set, Stock::from_level(5), Stock::ZERO);
    assert_eq!((down.quantity, down.available), (5, -5));
    assert!(down.fits());
}

#[test]
fn a_reason_is_trimmed_and_bounded() {
    assert_eq!(
        Reason::parse("  delivery 44 ").unwrap().as_str(),
        "delivery 44"
    );
    assert!(Reason::parse("   ").is_err());
    assert!(Reason::parse(&"x".repeat(201)).is_err());
    assert!(Reason::parse(&"é".repeat(200)).is_ok());
    assert!(Reason::parse("a\u{7}b").is_err());
}

#[test]
fn adjustment_units_are_bounded_and_never_zero() {
    assert!(AdjustmentUnits::new(0).is_err());
    assert!(AdjustmentUnits::new(1_000_001).is_err());
    assert!(AdjustmentUnits::new(-1_000_001).is_err());
    assert_eq!(AdjustmentUnits::new(-1_000_000).unwrap().get(), -1_000_000);
    let body: Adjustment =
        serde_json::from_str(r#"{"change": -2, "reason": "broken", "changeFromQuantity": 5}"#)
            .unwrap();
    assert_eq!(body.change.get(), -2);
    assert_eq!(body.change_from_quantity, Some(Stock::from_level(5)));
    assert!(serde_json::from_str::<Adjustment>(r#"{"change": 1}"#).is_err());
}

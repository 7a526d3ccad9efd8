use proptest::prelude::*;

use super::*;

#[test]
fn amounts_are_shown_with_their_currencys_minor_digits() {
    let show = |code: &str, units: i64| Currency::parse(code).unwrap().show(units);
    assert_eq!(show("EUR", 3750), "37.50 EUR");
    assert_eq!(show("EUR", 5), "0.05 EUR");
    assert_eq!(show("EUR", 0), "0.00 EUR");
    assert_eq!(show("JPY", 3750), "3750 JPY");
    assert_eq!(show("KWD", 1234), "1.234 KWD");
    assert_eq!(show("KWD", -7), "-0.007 KWD");
    assert_eq!(show("EUR", Total::MAX), "90071992547409.91 EUR");
}

#[test]
fn currencies_are_iso_codes_with_their_minor_units() {
    assert_eq!(Currency::parse("EUR").unwrap(), Currency::EUR);
    assert_eq!(Currency::parse("USD").unwrap().exponent(), 2);
    assert_eq!(Currency::parse("JPY").unwrap().exponent(), 0);
    assert_eq!(Currency::parse("KWD").unwrap().exponent(), 3);
    for refused in ["eur", "EURO", "", "XAU", "XXX", "ABC", " EUR"] {
        assert_eq!(
            Currency::parse(refused).unwrap_err().field,
            "currency",
            "{refused:?}"
        );
    }
    let json = serde_json::to_string(&Currency::parse("CHF").unwrap()).unwrap();
    assert_eq!(json, "\"CHF\"");
    assert_eq!(
        serde_json::from_str::<Currency>(&json).unwrap().code(),
        "CHF"
    );
}

#[test]
fn the_table_lists_each_code_once_in_order_and_every_exception_is_listed() {
    let mut codes = CODES.to_vec();
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes, CODES, "a code listed twice, or out of order");
    assert!(
        codes
            .iter()
            .all(|c| c.len() == 3 && c.bytes().all(|b| b.is_ascii_uppercase()))
    );
    for (code, _) in EXPONENTS {
        assert!(
            CODES.contains(code),
            "{code} has an exponent but is not listed"
        );
    }
}

#[test]
fn amounts_are_bounded_and_read_as_json_integers() {
    assert!(Amount::new(0).is_ok());
    assert!(Amount::new(Amount::MAX).is_ok());
    assert_eq!(Amount::new(-1).unwrap_err().field, "amount");
    assert_eq!(Amount::new(Amount::MAX + 1).unwrap_err().field, "amount");
    assert_eq!(
        serde_json::from_str::<Amount>("1999.0").unwrap().get(),
        1999
    );
    assert!(
        serde_json::from_str::<Amount>("19.99").is_err(),
        "minor units only"
    );
    assert!(serde_json::from_str::<Amount>("\"1999\"").is_err());
}

#[test]
fn a_total_past_the_bound_is_refused_not_wrapped() {
    let largest = Amount::new(Amount::MAX)
        .unwrap()
        .times(Quantity::new(1000).unwrap());
    assert_eq!(
        Total::sum(std::iter::repeat_n(largest, 90)).map(Total::get),
        Some(largest.get() * 90)
    );
    assert_eq!(Total::sum(std::iter::repeat_n(largest, 91)), None);
    assert_eq!(Total::sum([]), Some(Total::ZERO));
    assert!(Total::new(Total::MAX).is_ok());
    assert!(Total::new(Total::MAX + 1).is_err());
}

#[test]
fn a_sum_of_amounts_is_known_only_when_every_amount_is() {
    let two = Amount::new(2).unwrap().times(Quantity::ONE);
    let three = Amount::new(3).unwrap().times(Quantity::ONE);
    assert_eq!(
        Total::sum_known([Some(two), Some(three)]).map(Total::get),
        Some(5)
    );
    assert_eq!(Total::sum_known([Some(two), None]), None);
    let largest = Amount::new(Amount::MAX)
        .unwrap()
        .times(Quantity::new(1000).unwrap());
    assert_eq!(
        Total::sum_known(std::iter::repeat_n(Some(largest), 91)),
        None
    );
}

proptest! {
    #[test]
    fn a_line_is_its_price_times_its_quantity_exactly(
        amount in 0..=Amount::MAX, quantity in 1i64..=1000
    ) {
        let line = Amount::new(amount).unwrap().times(Quantity::new(quantity).unwrap());
        prop_assert_eq!(i128::from(line.get()), i128::from(amount) * i128::from(quantity));
        prop_assert!(line.get() <= Total::MAX);
    }

    #[test]
    fn fifty_lines_always_add_up_exactly(
        lines in prop::collection::vec((0..=Amount::MAX, 1i64..=1000), 1..=50)
    ) {
        let totals = lines.iter().map(|&(amount, quantity)| {
            Amount::new(amount).unwrap().times(Quantity::new(quantity).unwrap())
        });
        let expected: i128 = lines.iter().map(|&(a, q)| i128::from(a) * i128::from(q)).sum();
        let sum = Total::sum(totals).expect("50 lines fit");
        prop_assert_eq!(i128::from(sum.get()), expected);
        // Exact in a JavaScript number: an f64 holds it without loss.
        prop_assert_eq!(sum.get() as f64 as i64, sum.get());
    }
}

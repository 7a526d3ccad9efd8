//! The shop's one row: the currency its prices are in. Chosen by the first start of a version
//! that prices (`--currency`), and kept: every later start must name the same one, since an
//! amount read under another currency would be another price.

use petstore_core::Currency;

use crate::error::StoreError;

/// The shop's currency on `$conn`: the one stored, or `$wanted` stored now if none is. Two
/// nodes starting at once with different currencies: one row wins, the other start is
/// refused.
macro_rules! settle_currency {
    ($conn:expr, $wanted:expr) => {{
        use crate::schema::shop;
        use diesel::prelude::*;
        let wanted: petstore_core::Currency = $wanted;
        let read = |conn: &mut _| {
            shop::table
                .select(shop::currency)
                .first::<String>(conn)
                .optional()
        };
        // Read first: a start on a file it may only read (served read-only until it is
        // writable) writes nothing when the row is there.
        let stored = match read(&mut *$conn)? {
            Some(stored) => stored,
            None => {
                diesel::insert_into(shop::table)
                    .values((shop::id.eq(1_i64), shop::currency.eq(wanted.code())))
                    .on_conflict_do_nothing()
                    .execute(&mut *$conn)?;
                read(&mut *$conn)?.unwrap_or_default()
            }
        };
        crate::shop::judge(&stored, wanted)
    }};
}
pub(crate) use settle_currency;

/// `stored` if it is `wanted`; otherwise the start is refused, naming both.
pub(crate) fn judge(stored: &str, wanted: Currency) -> Result<Currency, StoreError> {
    let currency = Currency::parse(stored)
        .map_err(|e| StoreError::Corrupt(format!("shop row: currency {stored:?}: {e}")))?;
    if currency == wanted {
        Ok(currency)
    } else {
        Err(StoreError::CurrencyChanged {
            stored: currency,
            wanted,
        })
    }
}

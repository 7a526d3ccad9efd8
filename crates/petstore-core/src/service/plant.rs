//! The soak's planted bugs that read before the transaction that should read: `price-outside-tx`
//! (a checkout's prices) and `sweep-without-reread` (the holds a sweep ends), each a moment
//! before it, so that a change can commit in between. Never in a release.

#[cfg(feature = "plant-price-outside-tx")]
use std::collections::BTreeMap;

use super::Service;
use crate::error::DomainError;
use crate::repository::Store;
#[cfg(feature = "plant-price-outside-tx")]
use crate::{checkout::NewCheckout, ids::PetId, money::Price};

/// The prices of `checkout`'s pets, read in a snapshot of their own, and a pause after it.
#[cfg(feature = "plant-price-outside-tx")]
pub(super) fn prices_before<S: Store, C>(
    shop: &Service<S, C>,
    checkout: &NewCheckout,
) -> Result<BTreeMap<PetId, Option<Price>>, DomainError> {
    let prices = shop.store.read(|snapshot| {
        let mut prices = BTreeMap::new();
        for line in checkout.lines.lines() {
            let price = snapshot.pet(line.pet_id)?.and_then(|pet| pet.price);
            prices.insert(line.pet_id, price);
        }
        Ok(prices)
    })?;
    std::thread::sleep(std::time::Duration::from_millis(250));
    Ok(prices)
}

/// The holds `due`, read in a snapshot of their own, and a pause after it.
#[cfg(feature = "plant-sweep-without-reread")]
pub(super) fn holds_before<S: Store, C>(
    shop: &Service<S, C>,
    due: &[crate::ids::HoldId],
) -> Result<Vec<crate::hold::Hold>, DomainError> {
    let holds = shop.store.read(|snapshot| {
        let mut holds = Vec::new();
        for &id in due {
            holds.extend(snapshot.hold(id)?);
        }
        Ok(holds)
    })?;
    std::thread::sleep(std::time::Duration::from_millis(250));
    Ok(holds)
}

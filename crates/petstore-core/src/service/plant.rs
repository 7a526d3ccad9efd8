//! The soak's planted bug `price-outside-tx` (`bench/chaos --plant price-outside-tx`): a
//! checkout's prices read before the transaction that locks its pets, a moment before it, so
//! that a price change can commit in between. Never in a release.

use std::collections::BTreeMap;

use super::Service;
use crate::checkout::NewCheckout;
use crate::error::DomainError;
use crate::ids::PetId;
use crate::money::Price;
use crate::repository::Store;

/// The prices of `checkout`'s pets, read in a snapshot of their own, and a pause after it.
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

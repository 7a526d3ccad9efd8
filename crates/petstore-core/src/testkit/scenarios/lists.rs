//! Lists of pets and of their stock: their orders, both ways from any pet, and their counts.

use super::Fixture;
use crate::testkit::Must;
use crate::{InventoryQuery, PageSize, PetId, PetQuery, PetSort, Stock, Store};

impl<S: Store> Fixture<S> {
    /// The pets a page of `query` lists, in its order.
    fn listed(&self, query: &PetQuery) -> Vec<PetId> {
        let page = self.shop.pets().list(query).must("list the pets");
        page.items.iter().map(|pet| pet.id).collect()
    }

    /// The pets whose stock entries a page of the same query lists, in its order.
    fn stocked(&self, query: &PetQuery) -> Vec<PetId> {
        let query = InventoryQuery::of_pets(query);
        let page = self.shop.inventory().list(&query).must("list the stock");
        page.items.iter().map(|item| item.pet_id).collect()
    }
}

/// The pets and the stock list newest first as well as oldest first, both ways from any pet,
/// and a list of pets says how many its filters find, in all and after a position.
pub fn pets_and_stock_list_newest_first_and_are_counted<S: Store>(store: S) {
    let f = Fixture::new(store);
    let pets: Vec<_> = (0..7)
        .map(|n| f.pet_with_stock(&format!("Pet {n}"), n % 3).id)
        .collect();
    let two = PageSize::new(2).must("size");
    let newest = PetQuery::default().newest_first(true).page(None, two);
    assert_eq!(f.listed(&newest), vec![pets[6], pets[5]]);
    assert_eq!(f.stocked(&newest), f.listed(&newest));
    let second = newest.clone().page(Some(pets[5]), two);
    assert_eq!(f.listed(&second), vec![pets[4], pets[3]]);
    assert_eq!(f.stocked(&second), f.listed(&second));
    // Back from the second page's first pet: the page before it, nearest first.
    let back = second.clone().backwards_from(pets[4]);
    assert_eq!(f.listed(&back), vec![pets[5], pets[6]]);
    assert_eq!(f.stocked(&back), f.listed(&back));

    let count = |query: &PetQuery| f.shop.pets().count(query).must("count the pets");
    assert_eq!(count(&newest), 7);
    assert_eq!(count(&second), 5, "after the second newest");
    assert_eq!(count(&PetQuery::default().page(Some(pets[2]), two)), 4);
    // Units 0, 1, 2, 0, 1, 2, 0: at most one unit are pets 0, 1, 3, 4, 6.
    let low = PetQuery::default()
        .stock_at_most(Some(Stock::from_level(1)))
        .newest_first(true);
    assert_eq!(count(&low), 5);
    assert_eq!(
        f.listed(&low),
        vec![pets[6], pets[4], pets[3], pets[1], pets[0]]
    );
    assert_eq!(f.stocked(&low), f.listed(&low));
    let named = PetQuery::new(None, None, Some("pet 1".into()), Vec::new()).must("query");
    assert_eq!(count(&named), 1);
}

/// The pets and the stock list by name, A to Z and Z to A, pets of one name by id, both ways
/// from any pet; names compare folded (case aside) and byte by byte on every store, and a
/// page starts in its place even when the pet it starts after was deleted.
pub fn pets_and_stock_list_by_name_both_ways<S: Store>(store: S) {
    let f = Fixture::new(store);
    // Added in this order; by name: bella, Bella (added later), cléo, Zed, Émile (É is
    // past every ASCII letter, byte by byte).
    let named = ["Zed", "Bella", "cléo", "Émile", "bella"];
    let pets: Vec<_> = named
        .iter()
        .enumerate()
        .map(|(n, name)| f.pet_with_stock(name, n as u32).id)
        .collect();
    let [zed, bella, cleo, emile, bella_lower] = pets[..] else {
        panic!("five pets")
    };
    let two = PageSize::new(2).must("size");
    let by_name = PetQuery::default().sorted(PetSort::Name).page(None, two);
    let count = |query: &PetQuery| f.shop.pets().count(query).must("count the pets");
    let after = |query: &PetQuery, id, name: &str| {
        query
            .clone()
            .page(Some(id), two)
            .after_named(Some(name.to_owned()))
    };

    assert_eq!(f.listed(&by_name), vec![bella, bella_lower]);
    assert_eq!(f.stocked(&by_name), f.listed(&by_name));
    let second = after(&by_name, bella_lower, "bella");
    assert_eq!(f.listed(&second), vec![cleo, zed]);
    assert_eq!(f.stocked(&second), f.listed(&second));
    assert_eq!(count(&second), 3, "after the second by name");
    let last = after(&by_name, zed, "Zed");
    assert_eq!(f.listed(&last), vec![emile]);
    // Back from the second page's first pet: the page before it, nearest first.
    let back = second
        .clone()
        .backwards_from(cleo)
        .after_named(Some("cléo".into()));
    assert_eq!(f.listed(&back), vec![bella_lower, bella]);
    assert_eq!(f.stocked(&back), f.listed(&back));

    let z_to_a = by_name.clone().newest_first(true);
    assert_eq!(f.listed(&z_to_a), vec![emile, zed]);
    let next = after(&z_to_a, zed, "Zed");
    assert_eq!(f.listed(&next), vec![cleo, bella_lower]);
    assert_eq!(count(&next), 3);
    assert_eq!(f.stocked(&next), f.listed(&next));

    // Filters narrow a list by name as they narrow any other.
    let low = by_name
        .clone()
        .stock_at_most(Some(Stock::from_level(2)))
        .page(None, PageSize::MAX_PAGE);
    assert_eq!(f.listed(&low), vec![bella, cleo, zed]);
    assert_eq!(count(&low), 3);

    // The pet a page starts after is gone: the page starts where it stood.
    f.shop
        .pets()
        .delete(super::OPERATOR, cleo, crate::Always)
        .must("delete cléo");
    assert_eq!(f.listed(&after(&by_name, cleo, "cléo")), vec![zed, emile]);
}

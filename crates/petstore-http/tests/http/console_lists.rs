//! The console's lists as staff page through them: newest first or oldest, where a page
//! stands among everything the filter finds, the pages before and after, and a search by pet.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use serde_json::json;

use actix_web::dev::{Service, ServiceResponse};

use crate::common::{Reply, TestApp, start};
use crate::console::{page, sign_in};

/// The orders a page of the orders list shows, in its order.
fn order_rows(reply: &Reply) -> Vec<i64> {
    let html = reply.body.as_str().unwrap_or_default();
    html.split("<tr id=\"order-")
        .skip(1)
        .filter_map(|rest| rest.split('"').next()?.parse().ok())
        .collect()
}

/// The address a page's link of relation `rel` leads to.
fn link(reply: &Reply, rel: &str) -> Option<String> {
    let html = reply.body.as_str().unwrap_or_default();
    let at = html.find(&format!("rel=\"{rel}\" href=\""))?;
    let rest = &html[at + rel.len() + 13..];
    Some(rest[..rest.find('"')?].replace("&amp;", "&"))
}

fn says(reply: &Reply, text: &str) -> bool {
    reply.body.as_str().unwrap_or_default().contains(text)
}

#[actix_web::test]
async fn orders_list_newest_first_counted_paged_both_ways_and_searched_by_pet() {
    let api = start().await;
    let pets = [
        api.pet_with_stock("Rex", 100).await,
        api.pet_with_stock("Rexford", 100).await,
        api.pet_with_stock("Fido", 100).await,
    ];
    let mut placed = Vec::new();
    for n in 0..130 {
        let pet = pets[n % 3];
        let order = api
            .post("/v1/store/orders", json!({"petId": pet, "quantity": 1}))
            .await;
        assert_eq!(order.status, 201, "{order:?}");
        placed.push((order.body["id"].as_i64().unwrap(), pet));
    }
    let newest: Vec<i64> = placed.iter().rev().map(|(id, _)| *id).collect();
    let (cookie, _) = sign_in(&api, &api.admin, false).await;

    let first = page(&api, &cookie, "/console/orders").await;
    assert_eq!(first.status, 200);
    assert_eq!(order_rows(&first), newest[..100]);
    assert!(says(&first, "1–100 of 130"));
    assert_eq!(link(&first, "prev"), None);
    let next = link(&first, "next").expect("a next page");

    let second = page(&api, &cookie, &next).await;
    assert_eq!(order_rows(&second), newest[100..]);
    assert!(says(&second, "101–130 of 130"));
    assert_eq!(link(&second, "next"), None);
    let back = page(
        &api,
        &cookie,
        &link(&second, "prev").expect("a page before"),
    )
    .await;
    assert_eq!(order_rows(&back), newest[..100]);
    assert!(says(&back, "1–100 of 130"));

    let oldest = page(&api, &cookie, "/console/orders?sort=oldest").await;
    let ascending: Vec<i64> = placed.iter().map(|(id, _)| *id).collect();
    assert_eq!(order_rows(&oldest), ascending[..100]);

    // By name: Fido's orders only, counted.
    let fidos: Vec<i64> = placed
        .iter()
        .rev()
        .filter(|(_, pet)| *pet == pets[2])
        .map(|(id, _)| *id)
        .collect();
    let fido = page(&api, &cookie, "/console/orders?pet=fido").await;
    assert_eq!(order_rows(&fido), fidos);
    assert!(says(&fido, &format!("1–{0} of {0}", fidos.len())));
    // A name more than one pet has: staff choose, and the choice is the pet's id.
    let rexes = page(&api, &cookie, "/console/orders?pet=Rex").await;
    assert!(order_rows(&rexes).is_empty());
    assert!(says(&rexes, "More than one pet"), "{rexes:?}");
    let chosen = format!("pet={}", pets[0]);
    assert!(says(&rexes, &chosen), "{rexes:?}");
    let rex = page(&api, &cookie, &format!("/console/orders?{chosen}")).await;
    let rexs: Vec<i64> = placed
        .iter()
        .rev()
        .filter(|(_, pet)| *pet == pets[0])
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(order_rows(&rex), rexs);
    let nobody = page(&api, &cookie, "/console/orders?pet=Nobody").await;
    assert!(says(&nobody, "No pet&#39;s name contains") || says(&nobody, "No pet's name contains"));
    assert!(order_rows(&nobody).is_empty());
}

/// The pets a page of the pets list or the stock list shows, in its order.
fn pet_rows(reply: &Reply, list: &str) -> Vec<i64> {
    let html = reply.body.as_str().unwrap_or_default();
    let marker = match list {
        "/console/stock" => "<tr id=\"stock-",
        _ => "<td data-label=\"Id\">",
    };
    html.split(marker)
        .skip(1)
        .filter_map(|rest| rest.split(['"', '<']).next()?.parse().ok())
        .collect()
}

#[actix_web::test]
async fn the_pets_and_stock_lists_are_counted_paged_both_ways_and_turned() {
    let api = start().await;
    let mut pets = Vec::new();
    for n in 0..130 {
        pets.push(api.pet_with_stock(&format!("Pet {n:03}"), n % 4).await);
    }
    let (cookie, _) = sign_in(&api, &api.admin, false).await;
    for list in ["/console/pets", "/console/stock"] {
        let first = page(&api, &cookie, list).await;
        assert_eq!(first.status, 200, "{list}");
        assert_eq!(pet_rows(&first, list), pets[..100], "{list}");
        assert!(says(&first, "1–100 of 130"), "{list}");
        assert_eq!(link(&first, "prev"), None, "{list}");
        on_and_back(&api, &cookie, list, &first, &pets).await;

        let newest: Vec<i64> = pets.iter().rev().copied().collect();
        let turned = page(&api, &cookie, &format!("{list}?sort=newest")).await;
        assert_eq!(pet_rows(&turned, list), newest[..100], "{list}");
        // Out of stock (every fourth pet) and newest first, counted with the filter.
        let out = page(&api, &cookie, &format!("{list}?stock=out&sort=newest")).await;
        let empty: Vec<i64> = newest
            .iter()
            .copied()
            .filter(|id| pets.iter().position(|p| p == id).unwrap() % 4 == 0)
            .collect();
        assert_eq!(pet_rows(&out, list), empty, "{list}");
        assert!(says(&out, &format!("1–{0} of {0}", empty.len())), "{list}");
    }
}

#[actix_web::test]
async fn the_pets_and_stock_lists_sort_by_name_both_ways_and_page_by_it() {
    let api = start().await;
    let mut pets = Vec::new();
    // Names in another order than the ids: by name is not by when added.
    for n in 0..130 {
        let name = format!("Pet {:03}", (n * 37) % 130);
        pets.push((name.clone(), api.pet_with_stock(&name, 1).await));
    }
    let mut by_name = pets.clone();
    by_name.sort();
    let a_to_z: Vec<i64> = by_name.iter().map(|(_, id)| *id).collect();
    let z_to_a: Vec<i64> = a_to_z.iter().rev().copied().collect();
    let (cookie, _) = sign_in(&api, &api.admin, false).await;
    for list in ["/console/pets", "/console/stock"] {
        // The Name (pets) or Pet (stock) heading sorts by name; again, Z to A.
        let first = page(&api, &cookie, list).await;
        let heading = if list == "/console/pets" {
            "Name"
        } else {
            "Pet"
        };
        let sorting = heading_link(&first, heading).expect("a heading that sorts");
        assert!(sorting.contains("&sort=name&"), "{list}: {sorting}");
        let sorted = page(&api, &cookie, &sorting).await;
        assert_eq!(pet_rows(&sorted, list), a_to_z[..100], "{list}");
        assert!(says(&sorted, "aria-sort=\"ascending\""), "{list}");
        on_and_back(&api, &cookie, list, &sorted, &a_to_z).await;

        let turned = page(&api, &cookie, &heading_link(&sorted, heading).unwrap()).await;
        assert_eq!(pet_rows(&turned, list), z_to_a[..100], "{list}");
        assert!(says(&turned, "aria-sort=\"descending\""), "{list}");
        let rest = page(&api, &cookie, &link(&turned, "next").expect("a next page")).await;
        assert_eq!(pet_rows(&rest, list), z_to_a[100..], "{list}");
        assert!(says(&rest, "101–130 of 130"), "{list}");
    }
    let unknown = page(&api, &cookie, "/console/pets?sort=price").await;
    assert_eq!(unknown.status, 400);
}

/// From `first`, the first page of 130 `pets` (in the list's order) of `list`: the next page
/// has the last 30, and the page before that is the first again.
async fn on_and_back<S, B>(api: &TestApp<S>, cookie: &str, list: &str, first: &Reply, pets: &[i64])
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: actix_web::body::MessageBody + 'static,
{
    let second = page(api, cookie, &link(first, "next").expect("a next page")).await;
    assert_eq!(pet_rows(&second, list), pets[100..], "{list}");
    assert!(says(&second, "101–130 of 130"), "{list}");
    let back = page(api, cookie, &link(&second, "prev").expect("a page before")).await;
    assert_eq!(pet_rows(&back, list), pets[..100], "{list}");
}

/// The address the heading `label` of a list's table leads to.
fn heading_link(reply: &Reply, label: &str) -> Option<String> {
    let html = reply.body.as_str().unwrap_or_default();
    let cell = html
        .split("<th ")
        .find(|cell| cell.contains(&format!(">{label}</a>")))?;
    let rest = &cell[cell.find("href=\"")? + 6..];
    Some(rest[..rest.find('"')?].replace("&amp;", "&"))
}

//! An order at the counter: lines typed by pet name or id, the total shown, the order
//! placed only at that total; a refused line named, nothing placed.

#![allow(
    clippy::unwrap_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use actix_web::http::Method;
use actix_web::test::TestRequest;
use petstore_core::Role;
use serde_json::json;

use crate::common::{Reply, start};
use crate::console::{form_token, page, sign_in};

fn html(reply: &Reply) -> &str {
    reply.body.as_str().unwrap_or_default()
}

#[actix_web::test]
async fn a_counter_order_shows_its_total_and_is_placed_only_at_it() {
    let api = start().await;
    let rex = api.pet_with_stock("Rex", 5).await;
    let fido = api.pet_with_stock("Fido", 2).await;
    api.pet_with_stock("Polly", 3).await;
    let price = async |pet: i64, amount: i64| {
        let set = api
            .json(
                Method::PUT,
                &format!("/v1/pets/{pet}/price"),
                json!({"amount": amount}),
            )
            .await;
        assert_eq!(set.status, 200, "{set:?}");
    };
    price(rex, 1000).await;
    price(fido, 250).await;
    let staff = api.key(Role::Staff, 1).await;
    let (cookie, _) = sign_in(&api, &staff, false).await;
    let shown = page(&api, &cookie, "/console/orders/new").await;
    assert_eq!(shown.status, 200, "{shown:?}");
    assert_eq!(html(&shown).matches("name=\"pet\"").count(), 5);
    let token = form_token(&shown);
    let post = async |lines: &[(&str, &str)], step: &str, total: &str| {
        let mut fields = vec![
            ("form_token", token.clone()),
            ("step", step.to_owned()),
            ("expected_total", total.to_owned()),
        ];
        for (pet, units) in lines {
            fields.push(("pet", (*pet).to_owned()));
            fields.push(("units", (*units).to_owned()));
        }
        api.send_as(
            None,
            TestRequest::post()
                .uri("/console/orders/new")
                .insert_header(("cookie", cookie.clone()))
                .set_form(fields),
        )
        .await
    };

    // By name (case aside) and by id: the total before anything is placed.
    let fido_id = fido.to_string();
    let review = post(&[("rex", "2"), (&fido_id, "1"), ("", "")], "review", "").await;
    assert_eq!(review.status, 200, "{review:?}");
    assert!(
        html(&review).contains("Place the order for 22.50 EUR"),
        "{review:?}"
    );
    assert!(html(&review).contains("name=\"expected_total\" value=\"2250\""));
    assert_eq!(api.order_count().await, 0);

    // A pet without a price, and a name more than one pet has, are named on their lines.
    let unpriced = post(&[("Polly", "1")], "review", "").await;
    assert_eq!(unpriced.status, 409, "{unpriced:?}");
    assert!(
        html(&unpriced).contains("Polly has no price yet"),
        "{unpriced:?}"
    );
    assert!(!html(&unpriced).contains("Place the order for"));
    let vague = post(&[("o", "1")], "review", "").await;
    assert_eq!(vague.status, 400, "{vague:?}");
    assert!(html(&vague).contains("More than one pet"), "{vague:?}");
    let none = post(&[("", "")], "review", "").await;
    assert_eq!(none.status, 400, "{none:?}");

    // A price changed since the total was shown: refused, nothing placed.
    price(rex, 1100).await;
    let moved = post(&[(&rex.to_string(), "2"), (&fido_id, "1")], "place", "2250").await;
    assert_eq!(moved.status, 409, "{moved:?}");
    assert!(html(&moved).contains("total_mismatch"), "{moved:?}");
    assert_eq!(api.order_count().await, 0);
    // More than the stock: the line is named, nothing placed.
    let short = post(&[(&rex.to_string(), "2"), (&fido_id, "3")], "place", "2950").await;
    assert_eq!(short.status, 409, "{short:?}");
    assert!(
        html(&short).contains("not enough units of Fido"),
        "{short:?}"
    );
    assert_eq!(api.order_count().await, 0);

    // At the total shown: one order of both lines.
    let placed = post(&[(&rex.to_string(), "2"), (&fido_id, "1")], "place", "2450").await;
    assert_eq!(placed.status, 303, "{placed:?}");
    let location = placed.header("location").unwrap().to_owned();
    let id = location.rsplit('/').next().unwrap();
    let order = api.get(&format!("/v1/store/orders/{id}")).await;
    assert_eq!(
        order.body["lines"].as_array().unwrap().len(),
        2,
        "{order:?}"
    );
    assert_eq!(order.body["totalAmount"], 2450, "{order:?}");
}

/// The attempt a page's placing form carries (32 hex digits).
fn attempt_of(reply: &Reply) -> String {
    let text = html(reply);
    let Some(at) = text.find("name=\"attempt\" value=\"") else {
        panic!("a page without a placing form: {reply:?}");
    };
    text[at + 22..at + 22 + 32].to_owned()
}

/// A placing form sent twice (a double click, a resend after a lost answer) places one
/// order, and both answers lead to it; another order under the same attempt is refused. At
/// the counter and on a pet's page.
#[actix_web::test]
async fn a_placing_form_sent_twice_places_one_order() {
    let api = start().await;
    let rex = api.pet_with_stock("Rex", 9).await;
    let set = api
        .json(
            Method::PUT,
            &format!("/v1/pets/{rex}/price"),
            json!({"amount": 400}),
        )
        .await;
    assert_eq!(set.status, 200, "{set:?}");
    let staff = api.key(Role::Staff, 1).await;
    let (cookie, _) = sign_in(&api, &staff, false).await;
    let token = form_token(&page(&api, &cookie, "/console/orders/new").await);
    let send = async |uri: &str, fields: &[(&str, &str)]| {
        let mut form = vec![("form_token", token.clone())];
        form.extend(fields.iter().map(|(k, v)| (*k, (*v).to_owned())));
        api.send_as(
            None,
            TestRequest::post()
                .uri(uri)
                .insert_header(("cookie", cookie.clone()))
                .set_form(form),
        )
        .await
    };
    let rex_id = rex.to_string();

    let review = send(
        "/console/orders/new",
        &[("pet", &rex_id), ("units", "2"), ("step", "review")],
    )
    .await;
    assert_eq!(review.status, 200, "{review:?}");
    let attempt = attempt_of(&review);
    let place = [
        ("pet", rex_id.as_str()),
        ("units", "2"),
        ("expected_total", "800"),
        ("step", "place"),
        ("attempt", attempt.as_str()),
    ];
    let first = send("/console/orders/new", &place).await;
    let second = send("/console/orders/new", &place).await;
    assert_eq!(first.status, 303, "{first:?}");
    assert_eq!(second.status, 303, "{second:?}");
    assert_eq!(first.header("location"), second.header("location"));
    assert_eq!(api.order_count().await, 1);
    let other = [
        ("pet", rex_id.as_str()),
        ("units", "1"),
        ("expected_total", "400"),
        ("step", "place"),
        ("attempt", attempt.as_str()),
    ];
    let reused = send("/console/orders/new", &other).await;
    assert_eq!(reused.status, 422, "{reused:?}");
    assert_eq!(api.order_count().await, 1);
    // A review shows a new attempt each time.
    let again = send(
        "/console/orders/new",
        &[("pet", &rex_id), ("units", "2"), ("step", "review")],
    )
    .await;
    assert_ne!(attempt_of(&again), attempt);

    // The pet's page: its order form too.
    let pet_page = page(&api, &cookie, &format!("/console/pets/{rex}")).await;
    let attempt = attempt_of(&pet_page);
    let order = format!("/console/pets/{rex}/order");
    let fields = [("quantity", "1"), ("attempt", attempt.as_str())];
    let first = send(&order, &fields).await;
    let second = send(&order, &fields).await;
    assert_eq!(first.status, 303, "{first:?}");
    assert_eq!(second.status, 303, "{second:?}");
    assert_eq!(api.order_count().await, 2);
    let units = api.get(&format!("/v1/inventory/{rex}")).await;
    assert_eq!(units.body["quantity"], 6, "{units:?}");
}

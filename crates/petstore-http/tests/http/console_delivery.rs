//! A delivery entered in the console: every row with units received at once, as
//! adjustments with the delivery's reason, or none when any row is refused.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use actix_web::test::TestRequest;
use petstore_core::Role;

use crate::common::{Reply, start};
use crate::console::{form_token, page, sign_in};

fn html(reply: &Reply) -> &str {
    reply.body.as_str().unwrap_or_default()
}

/// The version the delivery page's row of `pet` carries.
fn row_version(reply: &Reply, pet: i64) -> String {
    let text = html(reply);
    let row = &text[text.find(&format!("id=\"delivery-{pet}\"")).unwrap()..];
    let at = row.find("name=\"version\" value=\"").unwrap() + 22;
    row[at..at + row[at..].find('"').unwrap()].to_owned()
}

#[actix_web::test]
async fn a_delivery_is_received_whole_or_refused_whole_with_each_row_named() {
    let api = start().await;
    let rex = api.pet_with_stock("Rex", 1).await;
    let fido = api.pet_with_stock("Fido", 0).await;
    let polly = api.pet_with_stock("Polly", 4).await;
    let staff = api.key(Role::Staff, 1).await;
    let (cookie, _) = sign_in(&api, &staff, false).await;
    let shown = page(&api, &cookie, "/console/stock/delivery").await;
    assert_eq!(shown.status, 200, "{shown:?}");
    let token = form_token(&shown);
    let api = &api;
    let units = async |pet: i64| {
        let item = api.get(&format!("/v1/inventory/{pet}")).await;
        item.body["quantity"].as_i64().unwrap()
    };
    let post = |rows: Vec<(i64, String, &'static str)>, reason: &'static str| {
        let mut fields = vec![("form_token", token.clone()), ("reason", reason.to_owned())];
        for (pet, version, units) in rows {
            fields.push(("pet", pet.to_string()));
            fields.push(("version", version));
            fields.push(("units", units.to_owned()));
        }
        api.send_as(
            None,
            TestRequest::post()
                .uri("/console/stock/delivery")
                .insert_header(("cookie", cookie.clone()))
                .set_form(fields),
        )
    };
    let version = |pet| row_version(&shown, pet);

    // Someone sets Fido's stock after the page was read: Fido's row is stale, so nothing
    // is received, Polly's row included; the page names Fido and keeps what was typed.
    let set = api
        .json(
            actix_web::http::Method::PATCH,
            &format!("/v1/inventory/{fido}"),
            serde_json::json!({"quantity": 2}),
        )
        .await;
    assert_eq!(set.status, 200);
    let stale = post(
        vec![
            (rex, version(rex), ""),
            (fido, version(fido), "3"),
            (polly, version(polly), "5"),
        ],
        "Delivery 42",
    )
    .await;
    assert_eq!(stale.status, 412, "{stale:?}");
    assert!(
        html(&stale).contains("Someone else changed Fido"),
        "{stale:?}"
    );
    assert!(
        html(&stale).contains("value=\"5\""),
        "Polly's units kept as typed"
    );
    assert_eq!((units(fido).await, units(polly).await), (2, 4));

    // Units that are no count, and a delivery with no units at all: refused, nothing moved.
    let bad = post(vec![(polly, version(polly), "-2")], "Delivery 42").await;
    assert_eq!(bad.status, 400, "{bad:?}");
    let none = post(vec![(polly, version(polly), "")], "Delivery 42").await;
    assert_eq!(none.status, 400, "{none:?}");
    assert!(html(&none).contains("at least one pet"), "{none:?}");
    let no_reason = post(vec![(polly, version(polly), "1")], " ").await;
    assert_eq!(no_reason.status, 400, "{no_reason:?}");
    assert_eq!(units(polly).await, 4);

    // With fresh versions: both rows received, as adjustments with the reason.
    let fresh = page(api, &cookie, "/console/stock/delivery").await;
    let received = post(
        vec![
            (rex, row_version(&fresh, rex), ""),
            (fido, row_version(&fresh, fido), "3"),
            (polly, row_version(&fresh, polly), "5"),
        ],
        "Delivery 42",
    )
    .await;
    assert_eq!(received.status, 303, "{received:?}");
    assert_eq!(received.header("location"), Some("/console/stock"));
    assert_eq!(
        (units(rex).await, units(fido).await, units(polly).await),
        (1, 5, 9)
    );
    let moves = api.get(&format!("/v1/inventory/{polly}/movements")).await;
    let last = moves.body.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["kind"], "adjusted", "{last}");
    assert_eq!(last["reason"], "Delivery 42", "{last}");
    // The stock page it leads to says what was received.
    let said = received.header("set-cookie").unwrap();
    assert!(
        said.contains("m=Received+8+units+for+2+pets%3A+Delivery+42."),
        "{said}"
    );
}

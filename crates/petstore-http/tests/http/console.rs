//! The staff console through the real app, without a browser (the browser's journeys are
//! `tests/console/`): sessions, their cookie, their ends on the app's clock, and the guards
//! on every change.

use actix_web::dev::{Service, ServiceResponse};
use actix_web::test::TestRequest;
use chrono::Duration;
use petstore_core::{Clock, Role};
use serde_json::json;

use crate::common::{Reply, TestApp, start};

/// The cookie a sign-in set (`name=value`), and the whole `Set-Cookie` line.
pub(crate) async fn sign_in<S, B>(api: &TestApp<S>, key: &str, https: bool) -> (String, String)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: actix_web::body::MessageBody + 'static,
{
    let mut request = TestRequest::post()
        .uri("/console/sign-in")
        .set_form([("key", key)]);
    if https {
        request = request.insert_header(("x-forwarded-proto", "https"));
    }
    let reply = api.send_as(None, request).await;
    assert_eq!(reply.status, 303, "{reply:?}");
    assert_eq!(reply.header("location"), Some("/console/"));
    let Some(line) = reply.header("set-cookie") else {
        panic!("a sign-in without a cookie: {reply:?}");
    };
    let cookie = line.split(';').next().unwrap_or_default().to_owned();
    (cookie, line.to_owned())
}

pub(crate) async fn page<S, B>(api: &TestApp<S>, cookie: &str, path: &str) -> Reply
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: actix_web::body::MessageBody + 'static,
{
    api.send_as(
        None,
        TestRequest::get()
            .uri(path)
            .insert_header(("cookie", cookie.to_owned())),
    )
    .await
}

/// The form token a page's forms carry.
pub(crate) fn form_token(page: &Reply) -> String {
    let html = html_of(page);
    let Some(at) = html.find("name=\"form_token\" value=\"") else {
        panic!("a page without a form: {page:?}");
    };
    html[at + 25..at + 25 + 64].to_owned()
}

fn html_of(reply: &Reply) -> &str {
    reply.body.as_str().unwrap_or_default()
}

#[actix_web::test]
async fn a_staff_key_opens_a_session_that_signing_out_ends() {
    let api = start().await;
    let staff = api.key(Role::Staff, 1).await;
    let (cookie, line) = sign_in(&api, &staff, false).await;
    assert!(cookie.starts_with("petstore_console=pss_"), "{line}");
    for attribute in ["Path=/console/", "HttpOnly", "SameSite=Strict"] {
        assert!(line.contains(attribute), "{line}");
    }
    assert!(!line.contains("Secure"), "plain HTTP: {line}");
    assert!(!line.contains(&staff), "the key is not the cookie");

    let pets = page(&api, &cookie, "/console/").await;
    assert_eq!(pets.status, 200);
    assert_eq!(pets.content_type, "text/html; charset=utf-8");
    assert_eq!(pets.header("cache-control"), Some("no-store"));
    let policy = pets.header("content-security-policy").unwrap();
    assert!(policy.contains("script-src 'self'") && !policy.contains("unsafe"));
    assert!(!html_of(&pets).contains(&staff));

    let token = form_token(&pets);
    let out = api
        .send_as(
            None,
            TestRequest::post()
                .uri("/console/sign-out")
                .insert_header(("cookie", cookie.clone()))
                .set_form([("form_token", token.as_str())]),
        )
        .await;
    assert_eq!(out.status, 303);
    assert!(out.header("set-cookie").unwrap().contains("Max-Age=0"));
    let after = page(&api, &cookie, "/console/").await;
    assert_eq!(after.status, 303, "the session ended on the server");
    assert_eq!(after.header("location"), Some("/console/sign-in"));
}

#[actix_web::test]
async fn under_https_the_cookie_is_secure() {
    let api = start().await;
    let (_, line) = sign_in(&api, &api.admin, true).await;
    assert!(line.contains("; Secure"), "{line}");
}

#[actix_web::test]
async fn a_customer_key_and_an_unknown_key_open_nothing() {
    let api = start().await;
    let customer = api.key(Role::Customer, 2).await;
    for (key, status) in [
        (customer.as_str(), 403),
        (&*format!("pst_{}", "0".repeat(64)), 401),
    ] {
        let reply = api
            .send_as(
                None,
                TestRequest::post()
                    .uri("/console/sign-in")
                    .set_form([("key", key)]),
            )
            .await;
        assert_eq!(reply.status, status, "{reply:?}");
        assert_eq!(reply.content_type, "text/html; charset=utf-8");
        assert!(reply.header("set-cookie").is_none());
    }
}

#[actix_web::test]
async fn a_session_ends_idle_after_30_minutes_and_in_use_after_12_hours() {
    let api = start().await;
    let (cookie, _) = sign_in(&api, &api.admin, false).await;
    api.clock.set(api.clock.now() + Duration::minutes(29));
    assert_eq!(page(&api, &cookie, "/console/stock").await.status, 200);
    // Used every 29 minutes, it lives until the twelfth hour.
    for _ in 0..23 {
        api.clock.set(api.clock.now() + Duration::minutes(29));
        assert_eq!(page(&api, &cookie, "/console/stock").await.status, 200);
    }
    api.clock.set(api.clock.now() + Duration::minutes(29));
    assert_eq!(page(&api, &cookie, "/console/stock").await.status, 303);

    let (idle, _) = sign_in(&api, &api.admin, false).await;
    api.clock.set(api.clock.now() + Duration::minutes(30));
    assert_eq!(page(&api, &idle, "/console/stock").await.status, 303);
}

#[actix_web::test]
async fn a_change_needs_the_form_token_and_this_origin() {
    let api = start().await;
    let (cookie, _) = sign_in(&api, &api.admin, false).await;
    let token = form_token(&page(&api, &cookie, "/console/categories").await);
    let post = |form: Vec<(&'static str, String)>, origin: Option<&'static str>| {
        let mut request = TestRequest::post()
            .uri("/console/categories")
            .insert_header(("cookie", cookie.clone()))
            .set_form(form);
        if let Some(origin) = origin {
            request = request.insert_header(("origin", origin));
        }
        request
    };
    let name = ("name", "Cats".to_owned());
    for (request, why) in [
        (post(vec![name.clone()], None), "no token"),
        (
            post(vec![name.clone(), ("form_token", "0".repeat(64))], None),
            "another token",
        ),
        (
            post(
                vec![name.clone(), ("form_token", token.clone())],
                Some("http://evil.example"),
            ),
            "another origin",
        ),
    ] {
        let reply = api.send_as(None, request).await;
        assert_eq!(reply.status, 403, "{why}: {reply:?}");
        assert!(html_of(&reply).contains("forbidden"), "{why}");
    }
    assert_eq!(api.get("/v1/categories").await.body, json!([]));

    let made = api
        .send_as(None, post(vec![name, ("form_token", token)], None))
        .await;
    assert_eq!(made.status, 303, "{made:?}");
    assert_eq!(api.get("/v1/categories").await.body[0]["name"], "Cats");
}

#[actix_web::test]
async fn a_refusal_is_the_api_s_shown_on_the_page() {
    let api = start().await;
    api.pet_with_stock("Rex", 1).await;
    let (cookie, _) = sign_in(&api, &api.admin, false).await;
    let token = form_token(&page(&api, &cookie, "/console/categories").await);
    let categories = api.get("/v1/categories").await;
    let name = categories.body[0]["name"].as_str().unwrap().to_uppercase();
    let reply = api
        .send_as(
            None,
            TestRequest::post()
                .uri("/console/categories")
                .insert_header(("cookie", cookie.clone()))
                .set_form([("name", name.as_str()), ("form_token", token.as_str())]),
        )
        .await;
    assert_eq!(reply.status, 409, "the API's status");
    assert_eq!(reply.content_type, "text/html; charset=utf-8");
    assert!(html_of(&reply).contains("<code>category_exists</code>"));
    assert_eq!(
        api.get("/v1/categories")
            .await
            .body
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[actix_web::test]
async fn assets_are_kept_a_year_and_unknown_paths_are_html_pages() {
    let api = start().await;
    let sign_in = api
        .send_as(None, TestRequest::get().uri("/console/sign-in"))
        .await;
    let html = html_of(&sign_in);
    let at = html.find("/console/assets/htmx-").unwrap();
    let script = &html[at..at + html[at..].find('"').unwrap()];
    let asset = api.send_as(None, TestRequest::get().uri(script)).await;
    assert_eq!(asset.status, 200);
    assert_eq!(
        asset.header("cache-control"),
        Some("public, max-age=31536000, immutable")
    );
    // Every answer under /console/ is a page, a missing one too: never the API's JSON.
    for missing in [
        "/console/assets/htmx-0.js",
        "/console/nowhere",
        "/console/pets/1/x",
    ] {
        let reply = api.send_as(None, TestRequest::get().uri(missing)).await;
        assert_eq!(reply.status, 404, "{missing}");
        assert_eq!(reply.content_type, "text/html; charset=utf-8", "{missing}");
        assert!(
            html_of(&reply).contains("<code>not_found</code>"),
            "{missing}"
        );
    }
}

/// The console's doors are under the limiter `/v1` uses: sign-ins take from the client
/// address's allowance, changes from the session key's; a refusal is a page saying when to
/// try again, with `Retry-After`, and nothing is done.
#[actix_web::test]
async fn sign_ins_and_changes_are_rate_limited_as_the_api_is() {
    use std::num::NonZeroU32;

    use petstore_http::app::HttpLimits;
    use petstore_http::auth::RateLimits;

    let two = NonZeroU32::new(2).unwrap();
    let api = crate::common::start_with(HttpLimits {
        rate: RateLimits::new(two, two),
        ..HttpLimits::default()
    })
    .await;
    let guess = || {
        TestRequest::post()
            .uri("/console/sign-in")
            .set_form([("key", format!("pst_{}", "ab".repeat(32)))])
    };
    for _ in 0..2 {
        assert_eq!(api.send_as(None, guess()).await.status, 401);
    }
    let limited = api.send_as(None, guess()).await;
    assert_eq!(limited.status, 429, "{limited:?}");
    assert_eq!(limited.content_type, "text/html; charset=utf-8");
    assert_eq!(limited.header("retry-after"), Some("1"));
    assert!(html_of(&limited).contains("retry in 1 s"), "{limited:?}");

    // A window later the address may sign in again; the session's changes then take from its
    // key's allowance, pages not at all.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let staff = api.key(Role::Staff, 1).await;
    let (cookie, _) = sign_in(&api, &staff, false).await;
    let token = form_token(&page(&api, &cookie, "/console/categories").await);
    let create = |name: &str| {
        TestRequest::post()
            .uri("/console/categories")
            .insert_header(("cookie", cookie.clone()))
            .set_form([("name", name), ("form_token", token.as_str())])
    };
    assert_eq!(api.send_as(None, create("Cats")).await.status, 303);
    assert_eq!(api.send_as(None, create("Dogs")).await.status, 303);
    let limited = api.send_as(None, create("Fish")).await;
    assert_eq!(limited.status, 429, "{limited:?}");
    assert_eq!(limited.header("retry-after"), Some("1"));
    let names: Vec<_> = api
        .get("/v1/categories")
        .await
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|category| category["name"].clone())
        .collect();
    assert_eq!(
        names,
        [json!("Cats"), json!("Dogs")],
        "nothing made past the limit"
    );
}

/// The shop's counters count what a committed write appended, whichever door it came
/// through: an order placed at the counter is an order placed.
#[actix_web::test]
async fn an_order_placed_in_the_console_is_counted() {
    let api = start().await;
    let dogs = api
        .post("/v1/categories", json!({"name": "Dogs"}))
        .await
        .body["id"]
        .clone();
    let rex = api
        .post("/v1/pets", json!({"name": "Rex", "categoryId": dogs}))
        .await
        .body["id"]
        .as_i64()
        .unwrap();
    let stocked = api
        .json(
            actix_web::http::Method::PATCH,
            &format!("/v1/inventory/{rex}"),
            json!({"quantity": 3}),
        )
        .await;
    assert_eq!(stocked.status, 200, "{stocked:?}");
    let placed = || async {
        let text = api.get("/metrics").await.body.as_str().unwrap().to_owned();
        text.lines()
            .find(|line| line.starts_with("petstore_orders_placed_total "))
            .and_then(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
    };
    let before = placed().await.unwrap_or(0.0);
    let staff = api.key(Role::Staff, 1).await;
    let (cookie, _) = sign_in(&api, &staff, false).await;
    let token = form_token(&page(&api, &cookie, &format!("/console/pets/{rex}")).await);
    let order = api
        .send_as(
            None,
            TestRequest::post()
                .uri(&format!("/console/pets/{rex}/order"))
                .insert_header(("cookie", cookie.clone()))
                .set_form([("quantity", "2"), ("form_token", token.as_str())]),
        )
        .await;
    assert_eq!(order.status, 303, "{order:?}");
    assert_eq!(placed().await, Some(before + 1.0));
    // A refused order (1 left, 2 asked) is not one.
    let refused = api
        .send_as(
            None,
            TestRequest::post()
                .uri(&format!("/console/pets/{rex}/order"))
                .insert_header(("cookie", cookie.clone()))
                .set_form([("quantity", "2"), ("form_token", token.as_str())]),
        )
        .await;
    assert_eq!(refused.status, 409, "{refused:?}");
    assert_eq!(placed().await, Some(before + 1.0));
    // The pet's page shows its stock movements: the level set through the API, then the order
    // placed here, by the session's key through the console.
    let shown = page(&api, &cookie, &format!("/console/pets/{rex}")).await;
    let html = html_of(&shown);
    let table = &html[html.find("Stock movements").expect("a movements table")..];
    let cells = |what: &str, units: &str, available: &str, in_orders: &str| {
        format!(
            "<td data-label=\"What\">{what}</td><td data-label=\"Units\">{units}</td>\
             <td data-label=\"Available after\">{available}</td>\
             <td data-label=\"In open orders after\">{in_orders}</td>"
        )
    };
    let set = table.find(&cells("set", "+3", "3", "0"));
    let committed = table.find(&cells("committed", "-2", "1", "2"));
    assert!(set.is_some() && committed > set, "{table}");
    assert!(table.contains("(staff, console)"), "{table}");
}

/// The events page reads as who did what to which thing, and filters by the key that did it
/// and by the pet it was done to.
#[actix_web::test]
async fn the_events_page_says_who_did_what_and_filters_by_key_and_pet() {
    let api = start().await;
    let dogs = api
        .post("/v1/categories", json!({"name": "Dogs"}))
        .await
        .body["id"]
        .clone();
    let mut pets = Vec::new();
    for name in ["Rex", "Fido"] {
        let pet = api
            .post("/v1/pets", json!({"name": name, "categoryId": dogs}))
            .await
            .body["id"]
            .as_i64()
            .unwrap();
        pets.push(pet);
    }
    let staff = api.key(Role::Staff, 1).await;
    let staff_id = api.get("/v1/keys").await.body[1]["id"].as_i64().unwrap();
    let set = api
        .send_as(
            Some(&staff),
            TestRequest::patch()
                .uri(&format!("/v1/inventory/{}", pets[0]))
                .set_json(json!({"quantity": 5})),
        )
        .await;
    assert_eq!(set.status, 200, "{set:?}");
    let (cookie, _) = sign_in(&api, &staff, false).await;

    let all = page(&api, &cookie, "/console/events").await;
    assert_eq!(all.status, 200);
    for said in [
        "admin 200 (admin, api) added the category Dogs",
        "admin 200 (admin, api) added the pet Rex",
        "staff 1 (staff, api) set Rex's stock to 5",
    ] {
        assert!(html_of(&all).contains(said), "{said}: {}", html_of(&all));
    }
    let by_staff = page(&api, &cookie, &format!("/console/events?key={staff_id}")).await;
    assert!(html_of(&by_staff).contains("set Rex's stock to 5"));
    assert!(!html_of(&by_staff).contains("added the pet"));
    let about_fido = page(&api, &cookie, &format!("/console/events?pet={}", pets[1])).await;
    assert!(html_of(&about_fido).contains("added the pet Fido"));
    assert!(!html_of(&about_fido).contains("Rex"));
    let bad = page(&api, &cookie, "/console/events?pet=rex").await;
    assert_eq!(bad.status, 400, "{bad:?}");
}

/// No page of 100 rows weighs over 100 KB (#68): the lists at their fullest, each pet with a
/// name of 40 characters, stock, and an open order.
#[actix_web::test]
async fn a_page_of_100_rows_stays_under_100_kb() {
    let api = start().await;
    for n in 0..100 {
        let pet = api
            .pet_with_stock(&format!("A pet with a name of forty chars, no {n:03}"), 5)
            .await;
        let order = api
            .post("/v1/store/orders", json!({"petId": pet, "quantity": 1}))
            .await;
        assert_eq!(order.status, 201, "{order:?}");
    }
    let (cookie, _) = sign_in(&api, &api.admin, false).await;
    for (path, rows) in [
        ("/console/pets", 100),
        ("/console/stock", 100),
        ("/console/orders", 100),
        ("/console/events", 50),
        ("/console/", 10),
    ] {
        let shown = page(&api, &cookie, path).await;
        assert_eq!(shown.status, 200, "{path}");
        let html = html_of(&shown);
        assert!(
            html.matches("<tr").count() > rows,
            "{path}: not a full page"
        );
        assert!(
            html.len() <= 100 * 1024,
            "{path}: {} bytes for {rows} rows",
            html.len()
        );
    }
}

/// A stock form refused for its low level (a field of the row's form) has set nothing, with or
/// without script.
#[actix_web::test]
async fn a_stock_form_refused_for_its_low_level_sets_nothing() {
    let api = start().await;
    let pet = api.pet_with_stock("Rex", 3).await;
    let (cookie, _) = sign_in(&api, &api.admin, false).await;
    let token = form_token(&page(&api, &cookie, "/console/stock").await);
    let entry = api.get(&format!("/v1/inventory/{pet}")).await;
    let version = entry.header("etag").unwrap().trim_matches('"').to_owned();
    for row in [false, true] {
        let mut request = TestRequest::post()
            .uri(&format!("/console/stock/{pet}"))
            .insert_header(("cookie", cookie.clone()))
            .set_form([
                ("quantity", "9"),
                ("version", version.as_str()),
                ("low_at", "many"),
                ("form_token", token.as_str()),
            ]);
        if row {
            request = request.insert_header(("hx-request", "true"));
        }
        let reply = api.send_as(None, request).await;
        assert_eq!(reply.status, 400, "{reply:?}");
        assert_eq!(reply.content_type, "text/html; charset=utf-8");
        let now = api.get(&format!("/v1/inventory/{pet}")).await;
        assert_eq!(now.body["quantity"], 3, "row: {row}");
    }
}

/// Today's low level is the staff's to set in its address, as the lists' is; one that is no
/// level is a 400 page, not a 500 nor JSON.
#[actix_web::test]
async fn today_runs_low_at_the_level_its_address_asks() {
    let api = start().await;
    api.pet_with_stock("Rex", 4).await;
    let (cookie, _) = sign_in(&api, &api.admin, false).await;
    let at_three = page(&api, &cookie, "/console/").await;
    assert_eq!(at_three.status, 200, "{at_three:?}");
    // Named in the running-out list, not only in the last changes.
    let running_low = ">Rex</a>: 4";
    assert!(!html_of(&at_three).contains(running_low), "{at_three:?}");
    let at_four = page(&api, &cookie, "/console/?low_at=4").await;
    assert!(html_of(&at_four).contains(running_low), "{at_four:?}");
    assert!(
        html_of(&at_four).contains("href=\"/console/pets?stock=low&amp;low_at=4\""),
        "{at_four:?}"
    );
    let bad = page(&api, &cookie, "/console/?low_at=many").await;
    assert_eq!(bad.status, 400, "{bad:?}");
    assert_eq!(bad.content_type, "text/html; charset=utf-8");
}

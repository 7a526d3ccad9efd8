//! The staff console: server-rendered pages under `/console/` for staff and admins
//! (`docs/console.md`).
//!
//! Each page is a thin view over the use cases the API runs, called the way the `/v1` handlers
//! call them (the same reads, the same writes, the same preconditions), so a refusal on a page
//! is the API's refusal, shown with its code and message. Templates (`view`) only lay out
//! what a handler hands them.
//!
//! What keeps a session safe ([`session`]):
//! - the API key is posted once, exchanged for a session whose token lives only in an
//!   `HttpOnly`, `SameSite=Strict` cookie (`Secure` under HTTPS); the key never reaches a page;
//! - every change is a `POST` that must carry the session's form token and, when the browser
//!   says where it comes from (`Origin`, `Sec-Fetch-Site`), come from this origin;
//! - every answer carries a Content-Security-Policy without inline script and `no-store`
//!   ([`security_headers`]); the only script is htmx, served by the binary ([`assets`]).

pub mod assets;
mod attempt;
mod catalogue;
mod categories;
mod counter;
mod delivery;
mod events;
mod keys;
mod lists;
mod order;
mod orders;
mod pager;
mod pet;
mod refused;
mod removals;
mod reply;
mod request;
mod session;
mod stock;
mod today;
mod view;
mod visitor;
mod webhooks;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::middleware::{Next, from_fn};
use actix_web::{Error, HttpResponse, Scope, web};
use petstore_core::Door;
use petstore_store::Freshness;

use crate::context;
use removals::{
    CategoryRemoval, KeyRemoval, OrderRemoval, PetRemoval, WebhookRemoval, ask, remove,
};

pub use request::ConsoleSettings;

/// Where the console is served.
pub const BASE: &str = "/console";

/// The console's routes, for the application to mount.
pub fn scope() -> Scope<
    impl actix_web::dev::ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = Error,
        InitError = (),
    >,
> {
    web::scope(BASE)
        .wrap(from_fn(security_headers))
        .route("", web::get().to(to_console_root))
        .route("/", web::get().to(today::today_page))
        .route("/pets", web::get().to(catalogue::pets_page))
        .route("/assets/{name}", web::get().to(asset))
        .route("/sign-in", web::get().to(session::sign_in_page))
        .route("/sign-in", web::post().to(session::sign_in))
        .route("/sign-out", web::post().to(session::sign_out))
        .route("/pets", web::post().to(catalogue::create_pet))
        .route("/pets/{petId}", web::get().to(pet::pet_page))
        .route("/pets/{petId}", web::post().to(pet::replace_pet))
        .route("/pets/{petId}/order", web::post().to(pet::place_order))
        .route("/pets/{petId}/stock", web::post().to(pet::set_pet_stock))
        .route("/pets/{petId}/delete", web::get().to(ask::<PetRemoval>))
        .route("/pets/{petId}/delete", web::post().to(remove::<PetRemoval>))
        .route("/categories", web::get().to(categories::categories_page))
        .route("/categories", web::post().to(categories::create_category))
        .route(
            "/categories/{categoryId}",
            web::post().to(categories::replace_category),
        )
        .route(
            "/categories/{categoryId}/delete",
            web::get().to(ask::<CategoryRemoval>),
        )
        .route(
            "/categories/{categoryId}/delete",
            web::post().to(remove::<CategoryRemoval>),
        )
        .route("/stock", web::get().to(stock::stock_page))
        .route("/stock/delivery", web::get().to(delivery::delivery_page))
        .route(
            "/stock/delivery",
            web::post().to(delivery::receive_delivery),
        )
        .route("/stock/{petId}", web::post().to(stock::set_stock))
        .route("/orders", web::get().to(orders::orders_page))
        .route("/orders/new", web::get().to(counter::counter_page))
        .route("/orders/new", web::post().to(counter::counter_post))
        .route("/orders/{orderId}", web::get().to(order::order_page))
        .route(
            "/orders/{orderId}/ship-date",
            web::post().to(order::set_ship_date),
        )
        .route(
            "/orders/{orderId}/complete",
            web::post().to(orders::complete_order),
        )
        .route(
            "/orders/{orderId}/cancel",
            web::get().to(ask::<OrderRemoval>),
        )
        .route(
            "/orders/{orderId}/cancel",
            web::post().to(remove::<OrderRemoval>),
        )
        .route("/events", web::get().to(events::events_page))
        .route("/keys", web::get().to(keys::keys_page))
        .route("/keys", web::post().to(keys::create_key))
        .route("/keys/{keyId}/revoke", web::get().to(ask::<KeyRemoval>))
        .route("/keys/{keyId}/revoke", web::post().to(remove::<KeyRemoval>))
        .route("/webhooks", web::get().to(webhooks::webhooks_page))
        .route("/webhooks", web::post().to(webhooks::create_webhook))
        .route(
            "/webhooks/{webhookId}",
            web::get().to(webhooks::webhook_page),
        )
        .route(
            "/webhooks/{webhookId}/resend",
            web::post().to(webhooks::resend_webhook),
        )
        .route(
            "/webhooks/{webhookId}/delete",
            web::get().to(ask::<WebhookRemoval>),
        )
        .route(
            "/webhooks/{webhookId}/delete",
            web::post().to(remove::<WebhookRemoval>),
        )
        // The address of a form's action, typed or reloaded: the page the form is on.
        .route("/sign-out", web::get().to(to_its_page))
        .route("/pets/{petId}/order", web::get().to(to_its_page))
        .route("/pets/{petId}/stock", web::get().to(to_its_page))
        .route("/categories/{categoryId}", web::get().to(to_its_page))
        .route("/stock/{petId}", web::get().to(to_its_page))
        .route("/orders/{orderId}/complete", web::get().to(to_its_page))
        .route("/orders/{orderId}/ship-date", web::get().to(to_its_page))
        .route("/webhooks/{webhookId}/resend", web::get().to(to_its_page))
        .default_service(web::to(not_found))
}

/// `GET /console/assets/{name}`: a missing one is a page, as every console answer is.
async fn asset(name: web::Path<String>) -> reply::Answer {
    Ok(assets::serve(&name)?)
}

/// `GET` of an action that asks nothing first (a form posts to it): the page the form is on,
/// for an address typed, kept or reloaded.
async fn to_its_page(req: actix_web::HttpRequest) -> HttpResponse {
    let path = req.path();
    let page = match req.match_pattern().as_deref() {
        Some("/console/sign-out") => "/console/",
        _ => path.rsplit_once('/').map_or(BASE, |(parent, _)| parent),
    };
    reply::see_other(page)
}

/// Any other address under `/console/`: an HTML page, as every console answer is.
async fn not_found(req: actix_web::HttpRequest) -> reply::Answer {
    let missing = format!("the console has no page {}", req.path());
    Err(crate::error::ApiError::not_found(missing).into())
}

/// `/console` is a folder: its pages' relative links need the slash.
async fn to_console_root() -> HttpResponse {
    HttpResponse::PermanentRedirect()
        .insert_header((header::LOCATION, "/console/"))
        .finish()
}

/// What no page may be without: a policy that runs only the console's own script and style
/// and lets no other site frame it or receive its forms, and (but for the hashed assets,
/// which never change) no copy in any cache, shared or not.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
    style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; \
    frame-ancestors 'none'; base-uri 'none'";

/// The one layer every console request crosses: it keeps the request's context (the
/// console's door, the trace it belongs to; the session's extractor names who asks) for its
/// writes to record, and puts the security headers on its answer.
async fn security_headers(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let origin = context::Origin::of(&req);
    let had_said = reply::cookie(req.request(), reply::SAID).is_some();
    let boosted_post =
        req.method() == actix_web::http::Method::POST && req.headers().contains_key("hx-boosted");
    let mut response =
        context::within(Door::Console, Freshness::Latest, origin, next.call(req)).await?;
    let shown = !response.status().is_redirection();
    let headers = response.headers_mut();
    // Said once: the page that showed it takes it away.
    if had_said && shown {
        headers.append(
            header::SET_COOKIE,
            HeaderValue::from_static(reply::SAID_TAKEN),
        );
    }
    // A form's answer drawn in place (a refusal, a secret shown once) keeps the address of
    // the page the form was on: the action's address is no page to come back to.
    if boosted_post && shown {
        headers.insert(
            HeaderName::from_static("hx-push-url"),
            HeaderValue::from_static("false"),
        );
    }
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        HeaderName::from_static("cross-origin-opener-policy"),
        HeaderValue::from_static("same-origin"),
    );
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    Ok(response)
}

//! The events page: the feed, newest page first, read where the API's feed is read (the
//! primary: reading the feed is what orders it).

use actix_web::web;
use maud::html;
use petstore_core::{EventId, PageSize};
use serde::Deserialize;

use super::reply::{Answer, html};
use super::session::Staff;
use super::view::page;
use crate::state::AppState;

/// How many events a page shows.
const PER_PAGE: u32 = 50;

/// The page's position, as its links send it.
#[derive(Debug, Default, Deserialize)]
pub(super) struct EventPosition {
    #[serde(default)]
    after: String,
}

/// `GET /console/events`: by default the latest events; `?after=N` the ones after id `N`.
pub(super) async fn events_page(
    staff: Staff,
    state: web::Data<AppState>,
    position: web::Query<EventPosition>,
) -> Answer {
    let asked: Option<i64> = match position.after.as_str() {
        "" => None,
        text => Some(text.trim().parse().map_err(|_| {
            crate::error::ApiError::invalid_parameter("after: must be an event id")
        })?),
    };
    let caller = staff.caller();
    let limit = PageSize::new(i64::from(PER_PAGE)).map_err(petstore_core::DomainError::from)?;
    let (events, after) = state
        .read_primary(move |shop| {
            let feed = shop.events();
            // Ids only grow, so the latest page starts at most PER_PAGE ids before the last.
            let after = match asked {
                Some(after) => after,
                None => feed
                    .last_id(caller)?
                    .map_or(0, |last| (last.get() - i64::from(PER_PAGE)).max(0)),
            };
            let from = (after > 0).then(|| EventId::new(after)).transpose()?;
            Ok((feed.after(caller, from, limit)?, after))
        })
        .await?;
    let newer = events.last().map(|event| event.id);
    let older = (after > 0).then(|| (after - i64::from(PER_PAGE)).max(0));
    let body = html! {
        p.muted { "Every change the shop recorded, oldest first on each page." }
        table {
            caption.sr-only { "Events" }
            thead { tr { th scope="col" { "Id" } th scope="col" { "Time (UTC)" } th scope="col" { "Type" } th scope="col" { "Subject" } } }
            tbody {
                @for event in &events {
                    tr {
                        td { (event.id) }
                        td { (event.time.format("%Y-%m-%d %H:%M:%S")) }
                        td { (event.event_type.as_str()) }
                        td { (event.subject) }
                    }
                }
            }
        }
        @if events.is_empty() { p { "No event yet." } }
        p {
            @if let Some(older) = older { a href={ "/console/events?after=" (older) } { "Older events" } " " }
            @if let Some(newer) = newer.filter(|_| events.len() == PER_PAGE as usize) {
                a href={ "/console/events?after=" (newer) } { "Newer events" }
            }
        }
    };
    Ok(html(
        actix_web::http::StatusCode::OK,
        page(&staff, "/console/events", "Events", body),
    ))
}

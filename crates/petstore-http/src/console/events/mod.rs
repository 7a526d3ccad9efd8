//! The events page: what the shop recorded, as sentences of who did what to which thing
//! (`sentence.rs`), newest page first, filterable by the key that did it and by the pet or
//! the order it was done to; and an order's history, for its page. Read where the API's feed is read (the primary: reading the feed is what orders
//! it).

mod sentence;

use actix_web::web;
use chrono::{DateTime, Utc};
use maud::html;
use std::collections::HashMap;

use petstore_core::{DomainError, Event, EventId, KeyId, OrderId, PageSize, PetId, PetQuery};
use serde::Deserialize;

use super::catalogue::pet_names;
use super::reply::{Answer, html, parsed_if_given};
use super::view::page;
use super::visitor::{Visit, Visitor};
use crate::state::{AppState, PetService};
use sentence::Reading;

/// How many events a page shows.
const PER_PAGE: usize = 50;

/// How far back a filtered page looks for its events: the latest this many.
const SEARCHED: i64 = 2_000;

/// The page's position and filters, as its links and form send them.
#[derive(Debug, Default, Deserialize)]
pub(super) struct EventFilter {
    #[serde(default)]
    after: String,
    /// A key's id: only what its holder did.
    #[serde(default)]
    key: String,
    /// A pet's id: only what was done to it (the pet, its stock, its orders).
    #[serde(default)]
    pet: String,
    /// An order's id: only what was done to it.
    #[serde(default)]
    order: String,
}

/// What a filtered page keeps of the events it searches.
#[derive(Debug, Clone, Copy, Default)]
struct Wanted {
    key: Option<KeyId>,
    pet: Option<PetId>,
    order: Option<OrderId>,
}

impl Wanted {
    fn any(self) -> bool {
        self.key.is_some() || self.pet.is_some() || self.order.is_some()
    }

    fn keeps(self, event: &Event) -> bool {
        let by = self.key.is_none_or(|key| {
            event.actor.as_ref().and_then(petstore_core::Actor::key) == Some(key)
        });
        let about = self.pet.is_none_or(|pet| {
            let pet = pet.get();
            let subject = event.subject.as_str();
            subject == format!("pets/{pet}")
                || subject == format!("inventory/{pet}")
                || (subject.starts_with("store/orders/") && event.data["petId"] == pet)
        });
        let of_order = self
            .order
            .is_none_or(|order| event.subject == format!("store/orders/{order}"));
        by && about && of_order
    }
}

/// What was done to order `id`, oldest first: the latest [`PER_PAGE`] of its events among
/// the last [`SEARCHED`].
pub(super) fn order_history(
    shop: &PetService<'_>,
    caller: petstore_core::Caller,
    id: OrderId,
) -> Result<Vec<Event>, DomainError> {
    let last = shop.events().last_id(caller)?.map_or(0, EventId::get);
    let wanted = Wanted {
        order: Some(id),
        ..Wanted::default()
    };
    search(shop, caller, last, wanted)
}

/// The events from `from` on, oldest first, reading back through at most the last
/// [`SEARCHED`]; and whether they reach back to `from` (else there are more before them).
pub(super) fn since(
    shop: &PetService<'_>,
    caller: petstore_core::Caller,
    from: DateTime<Utc>,
) -> Result<(Vec<Event>, bool), DomainError> {
    let last = shop.events().last_id(caller)?.map_or(0, EventId::get);
    let mut found: Vec<Event> = Vec::new();
    let whole = read_back(shop, caller, last, |page| {
        let reached = page.iter().any(|event| event.time < from);
        let mut kept: Vec<Event> = page
            .into_iter()
            .filter(|event| event.time >= from)
            .collect();
        kept.append(&mut found);
        found = kept;
        !reached
    })?;
    Ok((found, whole))
}

/// `events` (in order) as sentences, each read after the one before it; `names` are the
/// names of the pets they are about.
pub(super) fn sentences<'e>(
    events: &'e [Event],
    names: &HashMap<PetId, String>,
) -> Vec<(&'e Event, String)> {
    let mut reading = Reading::new(names);
    events
        .iter()
        .enumerate()
        .map(|(at, event)| {
            let before = at.checked_sub(1).map(|before| &events[before]);
            (event, reading.sentence(event, before))
        })
        .collect()
}

/// `GET /console/events`: by default the latest events; `?after=N` the ones after id `N`;
/// with `?key=` or `?pet=`, the latest of those events among the last [`SEARCHED`].
pub(super) async fn events_page(
    visit: Visit,
    state: web::Data<AppState>,
    filter: web::Query<EventFilter>,
) -> Answer {
    let asked: Option<i64> = match filter.after.trim() {
        "" => None,
        text => Some(text.parse().map_err(|_| {
            crate::error::ApiError::invalid_parameter("after: must be an event id")
        })?),
    };
    let wanted = Wanted {
        key: parsed_if_given(&filter.key)?,
        pet: parsed_if_given(&filter.pet)?,
        order: parsed_if_given(&filter.order)?,
    };
    let (staff, (events, after, names)) = Visitor::from(visit)
        .read_primary(&state, move |shop, caller| {
            let feed = shop.events();
            let last = || Ok::<_, DomainError>(feed.last_id(caller)?.map_or(0, EventId::get));
            let (events, after) = if wanted.any() {
                (search(shop, caller, last()?, wanted)?, None)
            } else {
                // Ids only grow, so the latest page starts at most PER_PAGE ids before the last.
                let after = match asked {
                    Some(after) => after,
                    None => (last()? - PER_PAGE as i64).max(0),
                };
                let from = (after > 0).then(|| EventId::new(after)).transpose()?;
                let size = PageSize::new(PER_PAGE as i64)?;
                (feed.after(caller, from, size)?, Some(after))
            };
            // No id filter would be every pet: a page about no pet reads none.
            let pets = pets_of(&events);
            let names = if pets.is_empty() {
                HashMap::new()
            } else {
                pet_names(shop, &PetQuery::new(None, None, None, pets)?)?
            };
            Ok((events, after, names))
        })
        .await?;
    let lines = sentences(&events, &names);
    let newer = events.last().map(|event| event.id);
    let older = after
        .filter(|after| *after > 0)
        .map(|after| (after - PER_PAGE as i64).max(0));
    let body = html! {
        form.filters method="get" action="/console/events" {
            label for="key" { "Key id" }
            input #key name="key" type="number" min="1" value=(filter.key);
            label for="pet" { "Pet id" }
            input #pet name="pet" type="number" min="1" value=(filter.pet);
            label for="order" { "Order id" }
            input #order name="order" type="number" min="1" value=(filter.order);
            button type="submit" { "Filter" }
        }
        @if wanted.any() {
            p.muted { "The latest " (PER_PAGE) " that match, among the last " (SEARCHED) " events. " a href="/console/events" { "All events" } }
        } @else {
            p.muted { "Every change the shop recorded, oldest first on each page." }
        }
        table.cards {
            caption.sr-only { "Events" }
            thead { tr { th scope="col" { "Id" } th scope="col" { "Time (UTC)" } th scope="col" { "What happened" } } }
            tbody {
                @for (event, sentence) in &lines {
                    tr {
                        td data-label="Id" { (event.id) }
                        td data-label="Time (UTC)" { (event.time.format("%Y-%m-%d %H:%M:%S")) }
                        td data-label="What happened" { (sentence) }
                    }
                }
            }
        }
        @if events.is_empty() { p { "No event yet." } }
        @if !wanted.any() {
            p {
                @if let Some(older) = older { a href={ "/console/events?after=" (older) } { "Older events" } " " }
                @if let Some(newer) = newer.filter(|_| events.len() == PER_PAGE) {
                    a href={ "/console/events?after=" (newer) } { "Newer events" }
                }
            }
        }
    };
    Ok(html(
        actix_web::http::StatusCode::OK,
        page(&staff, "/console/events", "Events", body),
    ))
}

/// The latest [`PER_PAGE`] events `wanted` keeps among the last [`SEARCHED`] up to `last`,
/// oldest first: read a page at a time, newest pages first.
fn search(
    shop: &PetService<'_>,
    caller: petstore_core::Caller,
    last: i64,
    wanted: Wanted,
) -> Result<Vec<Event>, petstore_core::DomainError> {
    let mut found: Vec<Event> = Vec::new();
    read_back(shop, caller, last, |page| {
        let mut kept: Vec<Event> = page.into_iter().filter(|e| wanted.keeps(e)).collect();
        kept.append(&mut found);
        found = kept;
        found.len() < PER_PAGE
    })?;
    let extra = found.len().saturating_sub(PER_PAGE);
    Ok(found.split_off(extra))
}

/// Reads the feed back from event `last`, a page at a time, newest page first, through at
/// most the last [`SEARCHED`] events: hands each page (oldest first) to `take`, which says
/// whether to read on. Whether the reading ended before the window did: at the feed's
/// start, or where `take` stopped it.
fn read_back(
    shop: &PetService<'_>,
    caller: petstore_core::Caller,
    last: i64,
    mut take: impl FnMut(Vec<Event>) -> bool,
) -> Result<bool, DomainError> {
    let feed = shop.events();
    let window = i64::from(PageSize::MAX_PAGE.get());
    let mut upto = last;
    while upto > 0 {
        if last - upto >= SEARCHED {
            return Ok(false);
        }
        let from = (upto - window).max(0);
        let start = (from > 0).then(|| EventId::new(from)).transpose()?;
        let page: Vec<Event> = feed
            .after(caller, start, PageSize::MAX_PAGE)?
            .into_iter()
            .filter(|event| event.id.get() <= upto)
            .collect();
        if !take(page) {
            return Ok(true);
        }
        upto = from;
    }
    Ok(true)
}

/// The pets `events` are about, each once (at most as many as the id filter takes).
pub(super) fn pets_of(events: &[Event]) -> Vec<PetId> {
    let mut pets: Vec<PetId> = events
        .iter()
        .flat_map(|event| {
            let id = if event.subject.starts_with("pets/") {
                event.data["id"].as_i64().or(event.data["petId"].as_i64())
            } else {
                event.data["petId"].as_i64()
            };
            // A checkout's or a hold's lines name their pets too.
            let lines = event.data["lines"].as_array().into_iter().flatten();
            id.into_iter()
                .chain(lines.filter_map(|line| line["petId"].as_i64()))
                .filter_map(|id| PetId::new(id).ok())
        })
        .collect();
    pets.sort_unstable();
    pets.dedup();
    pets.truncate(PetQuery::MAX_IDS);
    pets
}

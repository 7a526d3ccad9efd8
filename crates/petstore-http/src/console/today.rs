//! Today, the console's home page: what waits (open orders), what the day brought (orders
//! placed since midnight UTC and what they are worth), what is running out, the holds, the
//! last changes and who made them, and the webhook subscriptions falling behind.

use std::collections::{HashMap, HashSet};

use actix_web::web;
use chrono::NaiveTime;
use maud::{Markup, html};
use petstore_core::{EventType, InventoryQuery, OrderQuery, PageSize, PetId, Role, Stock};
use serde::Deserialize;

use super::catalogue::pet_names;
use super::events::{pets_of, sentences, since};
use super::lists::{level, low_at};
use super::reply::{Answer, html, units};
use super::view::{Viewer as _, page};
use super::visitor::{Visit, Visitor};
use crate::state::AppState;

/// How many of each list the page shows; each links to the whole list.
const SHOWN: usize = 5;

/// How many of the latest changes it shows.
const CHANGES: usize = 10;

/// How far ahead it looks for holds about to give their units back.
const EXPIRING_WITHIN_MINUTES: i64 = 15;

/// What Today's address may ask: the level at or below which a pet runs low, as the lists'
/// filter takes it (empty: the lists' default).
#[derive(Debug, Default, Deserialize)]
pub(super) struct TodayAsked {
    #[serde(default)]
    low_at: String,
}

/// `GET /console/`.
pub(super) async fn today_page(
    visit: Visit,
    state: web::Data<AppState>,
    asked: web::Query<TodayAsked>,
) -> Answer {
    let low_at = low_at(&asked.low_at)?;
    // The shop's clock says what day it is, as it stamps the events.
    let midnight = state
        .clock()
        .now()
        .date_naive()
        .and_time(NaiveTime::MIN)
        .and_utc();
    let shown = PageSize::new(SHOWN as i64).map_err(petstore_core::DomainError::from)?;
    let running_out = InventoryQuery {
        stock_at_most: Some(Stock::from_level(low_at)),
        limit: shown,
        ..InventoryQuery::default()
    };
    let open = OrderQuery {
        complete: Some(false),
        limit: PageSize::MAX_PAGE,
        ..OrderQuery::default()
    };
    // One trip, on the primary where the feed is read.
    let within = chrono::TimeDelta::minutes(EXPIRING_WITHIN_MINUTES);
    let (staff, (open, low, names, (holds, expiring), (events, whole_day), behind)) =
        Visitor::from(visit)
            .read_primary(&state, move |shop, caller| {
                let low = shop.inventory().list(&running_out)?;
                let mut names = pet_names(shop, &running_out.pets())?;
                let day = since(shop, caller, midnight)?;
                let expiring = shop.holds().expiring(caller, within, SHOWN as u32)?;
                let mut about = pets_of(&day.0);
                about.extend(
                    expiring
                        .iter()
                        .flat_map(|hold| hold.lines.iter().map(|line| line.pet_id)),
                );
                about.sort_unstable();
                about.dedup();
                if !about.is_empty() {
                    let query = petstore_core::PetQuery::new(None, None, None, about)?;
                    names.extend(pet_names(shop, &query)?);
                }
                Ok((
                    shop.orders().list(caller, &open)?,
                    low,
                    names,
                    (shop.holds().totals()?, expiring),
                    day,
                    shop.webhooks().delivery_status()?,
                ))
            })
            .await?;
    let day = Day::of(&events);
    let worth = state.currency().show(day.worth);
    let said = sentences(&events, &names);
    let latest = &said[said.len().saturating_sub(CHANGES)..];
    let behind: Vec<_> = behind.iter().filter(|hook| hook.lag > 0).collect();
    let admin = staff.role() == Role::Admin;
    let body = html! {
        div.summary {
            (tile("Open orders", &count(open.items.len(), open.next_after.is_some()), "/console/orders?status=open"))
            (tile("Placed today", &format!("{} worth {worth}", day.placed), "/console/orders"))
            (tile("Running low", &count(low.items.len(), low.next_after.is_some()), &format!("/console/pets?stock=low&low_at={low_at}")))
            (tile("Held for baskets", &units(u32::try_from(holds.units).unwrap_or(u32::MAX)), "/console/stock"))
        }
        @if !whole_day { p.muted { "Today's figures count the latest 2,000 events only." } }
        @if day.unpriced > 0 { p.muted { (day.unpriced) " of today's orders are unpriced: not in their worth." } }
        h2 { "Waiting to be completed" }
        @if open.items.is_empty() { p { "No open order." } }
        ul {
            @for order in open.items.iter().take(SHOWN) {
                li { a href={ "/console/orders/" (order.id) } { "Order " (order.id) } ", " (units(order.lines.iter().map(|l| l.quantity.get()).sum())) }
            }
        }
        h2 { "Running out" }
        form.inline method="get" action="/console/" {
            label for="today-low-at" { "Low at or below" }
            input #today-low-at name="low_at" type="number" min="0" max="1000000" value=(low_at);
            button.plain type="submit" { "Show" }
        }
        @if low.items.is_empty() { p { "Nothing is at " (low_at) " units or fewer." } }
        ul {
            @for item in &low.items {
                li {
                    a href={ "/console/pets/" (item.pet_id) } { (name(&names, item.pet_id)) } ": "
                    (level(item.quantity.get(), low_at))
                }
            }
        }
        h2 { "Holds" }
        p {
            (holds.holds) " active, " (units(u32::try_from(holds.units).unwrap_or(u32::MAX))) " set aside"
            @if let Some(due) = holds.oldest_due { "; one was due at " (due.format("%H:%M:%S")) " UTC and is not ended yet" }
            "."
        }
        @if !expiring.is_empty() {
            h3 { "Ending in the next " (EXPIRING_WITHIN_MINUTES) " minutes" }
            ul {
                @for hold in &expiring {
                    li {
                        "Hold " (hold.id) " ends at " (hold.expires_at.format("%H:%M:%S")) " UTC: "
                        @for (i, line) in hold.lines.iter().enumerate() {
                            @if i > 0 { ", " }
                            (units(line.quantity.get())) " of "
                            a href={ "/console/pets/" (line.pet_id) } { (name(&names, line.pet_id)) }
                        }
                        " back on sale"
                    }
                }
            }
        }
        @if !behind.is_empty() {
            h2 { "Webhooks falling behind" }
            ul {
                @for hook in &behind {
                    li {
                        @if admin { a href={ "/console/webhooks/" (hook.id) } { "Subscription " (hook.id) } }
                        @else { "Subscription " (hook.id) }
                        ": " (hook.lag) " events behind" @if !hook.due { ", waiting to retry" }
                    }
                }
            }
        }
        h2 { "Last changes" }
        @if latest.is_empty() { p { "None today." } }
        table.cards {
            caption.sr-only { "Last changes" }
            thead { tr { th scope="col" { "Time (UTC)" } th scope="col" { "What happened" } } }
            tbody {
                @for (event, sentence) in latest.iter().rev() {
                    tr {
                        td data-label="Time (UTC)" { (event.time.format("%H:%M:%S")) }
                        td data-label="What happened" { (sentence) }
                    }
                }
            }
        }
    };
    Ok(html(
        actix_web::http::StatusCode::OK,
        page(&staff, "/console/", "Today", body),
    ))
}

/// What the day's events say of its orders: how many were placed and are not cancelled,
/// what the priced ones are worth (in minor units), and how many are unpriced.
struct Day {
    placed: usize,
    worth: i64,
    unpriced: usize,
}

impl Day {
    fn of(events: &[petstore_core::Event]) -> Self {
        let cancelled: HashSet<i64> = events
            .iter()
            .filter(|event| event.event_type == EventType::OrderCancelled)
            .filter_map(|event| event.data["id"].as_i64())
            .collect();
        let placed: Vec<_> = events
            .iter()
            .filter(|event| event.event_type == EventType::OrderPlaced)
            .filter(|event| {
                event.data["id"]
                    .as_i64()
                    .is_some_and(|id| !cancelled.contains(&id))
            })
            .collect();
        let priced: Vec<i64> = placed
            .iter()
            .filter_map(|event| event.data["totalAmount"].as_i64())
            .collect();
        Self {
            placed: placed.len(),
            unpriced: placed.len() - priced.len(),
            worth: priced.iter().sum(),
        }
    }
}

/// A count of a list, "100 or more" when it went on.
fn count(shown: usize, more: bool) -> String {
    if more {
        format!("{shown} or more")
    } else {
        shown.to_string()
    }
}

fn name(names: &HashMap<PetId, String>, id: PetId) -> String {
    names
        .get(&id)
        .cloned()
        .unwrap_or_else(|| format!("pet {id}"))
}

/// A figure of the day, leading to its list.
fn tile(label: &str, figure: &str, list: &str) -> Markup {
    html! {
        a.tile href=(list) {
            span.figure { (figure) }
            span.label { (label) }
        }
    }
}

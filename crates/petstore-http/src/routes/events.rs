//! `/v1/events`: the feed of every change, as CloudEvents 1.0 (staff), and its live stream.
//!
//! Each change recorded its events in the same transaction as the change (the outbox), with
//! increasing ids; writers are serialised, so an event never becomes visible after one with a
//! larger id. A follower that pages with `after` therefore sees every event once, in order.

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use std::str::FromStr;

use petstore_core::{Caller, Event, EventId, PageSize, ValidationError};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::{Auth, StaffOnly};
use crate::error::ApiError;
use crate::pagination::ListQuery;
use crate::state::AppState;
use crate::wire::CloudEvent;

/// The events after `after`, oldest first.
#[utoipa::path(
    get,
    path = "/events",
    operation_id = "listEvents",
    tag = "events",
    params(ListEvents),
    security(("bearerAuth" = ["staff"])),
    responses(
        (status = 200, description = "Events, oldest first. When the page is full, `Link: rel=\"next\"` points after its last event; a follower polls that link.", body = Vec<CloudEvent>,
            headers(("Link" = String, description = "`</v1/events?after=N&limit=L>; rel=\"next\"` when the page is full."))),
    )
)]
pub async fn list_events(
    caller: Auth<StaffOnly>,
    state: web::Data<AppState>,
    ListQuery(params): ListQuery<ListEvents>,
) -> Result<HttpResponse, ApiError> {
    let after = params.after.and_then(|FeedPosition(after)| after);
    let limit = params.limit.unwrap_or_default();
    let events = state
        .read_primary(move |shop| shop.events().after(caller.0, after, limit))
        .await?;
    let mut response = HttpResponse::Ok();
    if events.len() == limit.get() as usize
        && let Some(last) = events.last()
    {
        let link = format!(
            "</v1/events?after={}&limit={}>; rel=\"next\"",
            last.id,
            limit.get()
        );
        response.insert_header((header::LINK, link));
    }
    let events: Vec<CloudEvent> = events.into_iter().map(CloudEvent::from).collect();
    Ok(response.json(events))
}

/// The parameters of `listEvents`. The feed pages by event id, not by cursor: a follower
/// keeps the last id it saw.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListEvents {
    /// Only events with a larger id; 0 or absent for the first.
    #[serde(default, deserialize_with = "crate::pagination::text::one")]
    #[param(value_type = Option<i64>, minimum = 0, maximum = 9007199254740991_i64)]
    after: Option<FeedPosition>,
    /// How many, 20 if not given.
    #[serde(default, deserialize_with = "crate::pagination::text::one")]
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    limit: Option<PageSize>,
}

/// A position in the feed: after this event id, or from the first event for 0.
#[derive(Debug, Clone, Copy)]
struct FeedPosition(Option<EventId>);

impl FromStr for FeedPosition {
    type Err = ValidationError;

    fn from_str(text: &str) -> Result<Self, ValidationError> {
        if text == "0" {
            return Ok(FeedPosition(None));
        }
        text.parse::<EventId>().map(|id| FeedPosition(Some(id)))
    }
}

impl Follower {
    /// Waits until an event after the stream's position may exist, or a heartbeat is due.
    /// Waits a short while for an event after the stream's position: whether the feed is
    /// worth reading again. The wait is short so that a stopping service or a heartbeat due is
    /// noticed; only news (or, without a watcher, every wait) leads to a database read.
    async fn wait_for_news(&mut self) -> bool {
        let wait = POLL.min(HEARTBEAT.saturating_sub(self.quiet_since.elapsed()));
        let after = self.after;
        let Some(changes) = self.changes.as_mut() else {
            actix_web::rt::time::sleep(wait).await;
            return true;
        };
        let news = async {
            loop {
                if *changes.borrow_and_update() > after {
                    return true;
                }
                if changes.changed().await.is_err() {
                    // The watcher is gone (the service is stopping): read, then end.
                    return true;
                }
            }
        };
        actix_web::rt::time::timeout(wait, news)
            .await
            .unwrap_or(false)
    }
}

/// How often an open stream looks for new events when there were none and no watcher tells it.
const POLL: std::time::Duration = std::time::Duration::from_millis(250);
/// How long a stream stays silent before a heartbeat comment, so that proxies keep it open.
const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(15);

/// Where an open stream is.
struct Follower {
    caller: Caller,
    /// The node's latest event id, when its watcher runs: the stream reads the database only
    /// when there is something after its position.
    changes: Option<tokio::sync::watch::Receiver<Option<EventId>>>,
    /// Whether the feed may hold events after the position: read it before waiting again.
    stale: bool,
    state: web::Data<AppState>,
    after: Option<EventId>,
    quiet_since: std::time::Instant,
}

/// One Server-Sent Events frame per event: its id, its type, and the CloudEvent on one line.
fn frames(events: Vec<Event>) -> String {
    let mut text = String::new();
    for event in events {
        let id = event.id;
        let kind = event.event_type;
        let json = serde_json::to_string(&CloudEvent::from(event)).unwrap_or_default();
        text.push_str(&format!("id: {id}\nevent: {kind}\ndata: {json}\n\n"));
    }
    text
}

/// The live stream of events, as Server-Sent Events.
#[utoipa::path(
    get,
    path = "/events/stream",
    operation_id = "streamEvents",
    tag = "events",
    params(
        ("Last-Event-ID" = Option<String>, Header, nullable = false, pattern = "^(0|[1-9][0-9]{0,15})$", description = "Resume after this event id (`0`: from the first event): everything after it is sent first, then live events. Without it, only events from now on. An event's id is its frame's `id`."),
    ),
    security(("bearerAuth" = ["staff"])),
    responses(
        (status = 200, description = "A `text/event-stream` that stays open: one frame per event (`id:` its id, `event:` its type, `data:` the CloudEvent as JSON; the schema is each frame's, a `StreamedEvent`), and a `: heartbeat` comment after 15 s of silence. A client that reconnects with `Last-Event-ID` misses nothing.", content_type = "text/event-stream", body = String),
        (status = 400, description = "`invalid_parameter`: `Last-Event-ID` is not an event id.", body = crate::error::ErrorBody),
    )
)]
pub async fn stream_events(
    caller: Auth<StaffOnly>,
    state: web::Data<AppState>,
    request: actix_web::HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let after = match request.headers().get("last-event-id") {
        Some(value) => {
            let text = value
                .to_str()
                .map_err(|_| ApiError::invalid_parameter("Last-Event-ID: not an event id"))?;
            text.parse::<FeedPosition>()
                .map_err(|_| ApiError::invalid_parameter("Last-Event-ID: not an event id"))?
                .0
        }
        None => {
            state
                .read_primary(move |shop| shop.events().last_id(caller.0))
                .await?
        }
    };
    let follower = Follower {
        changes: state.changes().subscribe(),
        caller: caller.0,
        state,
        after,
        quiet_since: std::time::Instant::now(),
        stale: true,
    };
    let opening = futures_util::stream::once(async {
        Ok::<_, actix_web::Error>(web::Bytes::from_static(b": connected\n\n"))
    });
    // Pulled by actix only when the client has taken the previous chunk: a slow client slows
    // its own stream and nothing else.
    let events = futures_util::stream::unfold(follower, |mut follower| async move {
        loop {
            if follower.state.is_stopping() {
                // The service is draining: end, and the client resumes elsewhere.
                return None;
            }
            let (after, caller) = (follower.after, follower.caller);
            let batch = if follower.stale {
                follower
                    .state
                    .read_primary(move |shop| {
                        shop.events().after(caller, after, PageSize::MAX_PAGE)
                    })
                    .await
            } else {
                Ok(Vec::new())
            };
            match batch {
                Ok(events) if !events.is_empty() => {
                    follower.after = events.last().map(|e| e.id);
                    follower.quiet_since = std::time::Instant::now();
                    let chunk = web::Bytes::from(frames(events));
                    return Some((Ok::<_, actix_web::Error>(chunk), follower));
                }
                Ok(_) if follower.quiet_since.elapsed() >= HEARTBEAT => {
                    follower.quiet_since = std::time::Instant::now();
                    return Some((Ok(web::Bytes::from_static(b": heartbeat\n\n")), follower));
                }
                Ok(_) => follower.stale = follower.wait_for_news().await,
                // The client reconnects with Last-Event-ID and misses nothing.
                Err(_) => return None,
            }
        }
    });
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .streaming(futures_util::StreamExt::chain(opening, events)))
}

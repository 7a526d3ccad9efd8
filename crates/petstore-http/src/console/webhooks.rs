//! The admins' webhooks pages: subscriptions listed, created (the secret shown once), their
//! delivery attempts, resent and deleted. Staff reaching them are refused by the use cases, as
//! the API refuses them.

use actix_web::web;
use maud::html;
use petstore_core::{
    DeliveryQuery, EventType, EventTypes, NewWebhook, PageSize, Webhook, WebhookId, WebhookQuery,
    WebhookSecret, WebhookUrl,
};
use serde::Deserialize;

use super::refused::{Input, Refusal, input, message, note_at};
use super::reply::{Answer, html, parsed, see_other_saying, status_of, unchanged};
use super::session::{Submitted, one_or_more};
use super::view::{Shows, page, shown_once, token_field, version_field};
use super::visitor::{Visit, Visitor};
use crate::auth::random_bytes;
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;

/// `GET /console/webhooks`.
pub(super) async fn webhooks_page(visit: Visit, state: web::Data<AppState>) -> Answer {
    webhooks_answer(visit.into(), &state, None, None).await
}

async fn webhooks_answer(
    visitor: Visitor,
    state: &AppState,
    refused: Option<(Refusal, WebhookFields)>,
    made: Option<Shows<'_>>,
) -> Answer {
    let query = WebhookQuery {
        limit: PageSize::MAX_PAGE,
        ..WebhookQuery::default()
    };
    let (staff, hooks) = visitor
        .read(state, move |shop, caller| {
            shop.webhooks().list(caller, &query)
        })
        .await?;
    let staff = &staff;
    let refusal = refused.as_ref().map(|(refusal, _)| refusal);
    let typed = refused.as_ref().map(|(_, typed)| typed);
    let body = html! {
        @if let Some(made) = &made { (shown_once(made)) }
        table.cards {
            caption.sr-only { "Webhook subscriptions" }
            thead { tr { th scope="col" { "Id" } th scope="col" { "URL" } th scope="col" { "Events" } th scope="col" { "Delivered through" } } }
            tbody {
                @for hook in &hooks.items {
                    tr {
                        td data-label="Id" { a href={ "/console/webhooks/" (hook.id) } { "Subscription " (hook.id) } }
                        td data-label="URL" { (hook.url.to_string()) }
                        td data-label="Events" { (event_list(hook)) }
                        td data-label="Delivered through" { (hook.delivery.delivered_through.map(|id| id.to_string()).unwrap_or_else(|| "none yet".into())) }
                    }
                }
            }
        }
        h2 { "Subscribe" }
        form.stacked method="post" action="/console/webhooks" {
            (message(refusal, "the new subscription"))
            (token_field(staff))
            label for="webhook-url" { "URL (http or https, to a public address unless the operator allows private ones)" }
            (input(refusal, &Input::url("webhook-url", "url", typed.map_or("", |t| t.url.as_str()))))
            (note_at(refusal, "url", "webhook-url", "the new subscription"))
            fieldset {
                legend { "Events" }
                @for event_type in EventType::ALL {
                    @let field = format!("event-{}", event_type.as_str().replace('.', "-"));
                    @let checked = typed.is_some_and(|t| t.events.iter().any(|e| e == event_type.as_str()));
                    div {
                        input id=(field) type="checkbox" name="events" value=(event_type.as_str()) checked[checked];
                        " "
                        label for=(field) { (event_type.as_str()) }
                    }
                }
            }
            (note_at(refusal, "events", "webhook-events", "the new subscription"))
            button type="submit" { "Subscribe" }
        }
    };
    Ok(html(
        status_of(refusal),
        page(staff, "/console/webhooks", "Webhooks", body),
    ))
}

fn event_list(hook: &Webhook) -> String {
    let names: Vec<&str> = hook.events.as_slice().iter().map(|t| t.as_str()).collect();
    names.join(", ")
}

/// The new subscription form's fields.
#[derive(Debug, Deserialize)]
pub(super) struct WebhookFields {
    url: String,
    #[serde(default, deserialize_with = "one_or_more")]
    events: Vec<String>,
}

/// `POST /console/webhooks`: the answer shows the subscription's secret, once.
pub(super) async fn create_webhook(
    state: web::Data<AppState>,
    form: Submitted<WebhookFields>,
) -> Answer {
    let Submitted { staff, fields } = form;
    let caller = staff.caller();
    let made = async {
        let types = fields
            .events
            .iter()
            .map(|text| parsed::<EventType>(text))
            .collect::<Result<Vec<_>, _>>()
            .map_err(Refusal::at("events"))?;
        let invalid =
            |field| move |e| Refusal::at(field)(petstore_core::DomainError::from(e).into());
        let new = NewWebhook {
            url: WebhookUrl::parse(fields.url.trim()).map_err(invalid("url"))?,
            events: EventTypes::new(types).map_err(invalid("events"))?,
        };
        let secret = WebhookSecret::from_random(random_bytes()?);
        let shown = secret.reveal().to_owned();
        let hook = state
            .write(move |shop| shop.webhooks().create(caller, new.clone(), &secret))
            .await
            .map_err(|error| Refusal::from(error).placed(&[(ErrorCode::ForbiddenTarget, "url")]))?;
        Ok::<_, Refusal>((hook, shown))
    }
    .await;
    match made {
        Ok((hook, secret)) => {
            let what = format!("subscription {}", hook.id);
            let shows = Shows {
                what: &what,
                kept: "the service keeps it to sign each delivery, and never shows it again",
                secret: &secret,
            };
            webhooks_answer(staff.into(), &state, None, Some(shows)).await
        }
        Err(refusal) => webhooks_answer(staff.into(), &state, Some((refusal, fields)), None).await,
    }
}

/// `GET /console/webhooks/{webhookId}`: a subscription and its latest delivery attempts.
pub(super) async fn webhook_page(
    visit: Visit,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Answer {
    let id: WebhookId = parsed(&id)?;
    webhook_answer(visit.into(), &state, id, None).await
}

async fn webhook_answer(
    visitor: Visitor,
    state: &AppState,
    id: WebhookId,
    refused: Option<(Refusal, ResendFields)>,
) -> Answer {
    let query = DeliveryQuery {
        limit: PageSize::MAX_PAGE,
        ..DeliveryQuery::default()
    };
    let (staff, (hook, attempts)) = visitor
        .read(state, move |shop, caller| {
            let hooks = shop.webhooks();
            Ok((
                hooks.get(caller, id)?,
                hooks.deliveries(caller, id, &query)?.items,
            ))
        })
        .await?;
    let staff = &staff;
    let action = format!("/console/webhooks/{id}");
    let refusal = refused.as_ref().map(|(refusal, _)| refusal);
    let typed = refused.as_ref().map(|(_, typed)| typed);
    let subject = format!("subscription {id}");
    let body = html! {
        dl {
            dt { "URL" } dd { (hook.url.to_string()) }
            dt { "Events" } dd { (event_list(&hook)) }
            dt { "Delivered through event" } dd { (hook.delivery.delivered_through.map(|e| e.to_string()).unwrap_or_else(|| "none yet".into())) }
            dt { "Failed attempts in a row" } dd { (hook.delivery.failed_attempts) }
        }
        h2 { "Send events again" }
        (message(refusal, &subject))
        form.inline method="post" action={ (action) "/resend" } {
            (token_field(staff))
            (version_field(&hook))
            label for="resend-from" { "From event id" }
            (input(refusal, &Input::count("resend-from", "from_event_id", typed.map_or("1", |t| t.from_event_id.as_str()))))
            button.plain type="submit" { "Resend" }
        }
        (note_at(refusal, "from_event_id", "resend-from", &subject))
        h2 { "Latest delivery attempts" }
        table.cards {
            caption.sr-only { "Delivery attempts" }
            thead { tr { th scope="col" { "Event" } th scope="col" { "Type" } th scope="col" { "Attempt" } th scope="col" { "At (UTC)" } th scope="col" { "Outcome" } } }
            tbody {
                @for attempt in attempts.iter().rev() {
                    tr {
                        td data-label="Event" { (attempt.event_id) }
                        td data-label="Type" { (attempt.event_type.as_str()) }
                        td data-label="Attempt" { (attempt.attempt) }
                        td data-label="At (UTC)" { (attempt.attempted_at.format("%Y-%m-%d %H:%M:%S")) }
                        td data-label="Outcome" {
                            (format!("{:?}", attempt.outcome).to_lowercase())
                            @if let Some(code) = attempt.status_code { " (HTTP " (code) ")" }
                            @if let Some(error) = &attempt.error { " " (error) }
                        }
                    }
                }
            }
        }
        @if attempts.is_empty() { p { "No attempt yet." } }
        h2 { "Delete" }
        p { a.button.danger href={ (action) "/delete" } { "Delete subscription " (id) "…" } }
    };
    let title = format!("Subscription {id}");
    Ok(html(
        status_of(refusal),
        page(staff, "/console/webhooks", &title, body),
    ))
}

/// The resend form's fields.
#[derive(Debug, Deserialize)]
pub(super) struct ResendFields {
    from_event_id: String,
    #[serde(default)]
    version: String,
}

/// `POST /console/webhooks/{webhookId}/resend`.
pub(super) async fn resend_webhook(
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Submitted<ResendFields>,
) -> Answer {
    let Submitted { staff, fields } = form;
    let id: WebhookId = parsed(&id)?;
    let caller = staff.caller();
    let resent = async {
        let from = fields
            .from_event_id
            .trim()
            .parse::<i64>()
            .ok()
            .and_then(|id| petstore_core::EventId::new(id).ok())
            .ok_or_else(|| {
                Refusal::at("from_event_id")(ApiError::validation(
                    "from_event_id: must be an event id",
                ))
            })?;
        let condition = unchanged::<Webhook>(fields.version.clone());
        state
            .write(move |shop| shop.webhooks().resend(caller, id, from, condition.clone()))
            .await
            .map_err(Refusal::from)
    }
    .await;
    match resent {
        Ok(_) => Ok(see_other_saying(
            &format!("/console/webhooks/{id}"),
            &format!(
                "Subscription {id} will be sent every event from {} on again.",
                fields.from_event_id.trim()
            ),
        )),
        Err(refusal) => webhook_answer(staff.into(), &state, id, Some((refusal, fields))).await,
    }
}

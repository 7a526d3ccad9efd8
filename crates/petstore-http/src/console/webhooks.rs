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

use super::reply::{Answer, Shown, VersionOnly, html, parsed, see_other, status_of, unchanged};
use super::session::{Staff, Submitted};
use super::view::{Shows, page, refusal, shown_once, token_field, version_field};
use crate::auth::random_bytes;
use crate::error::ApiError;
use crate::state::AppState;

/// `GET /console/webhooks`.
pub(super) async fn webhooks_page(staff: Staff, state: web::Data<AppState>) -> Answer {
    webhooks_answer(&staff, &state, None, None).await
}

async fn webhooks_answer(
    staff: &Staff,
    state: &AppState,
    shown: Shown,
    made: Option<Shows<'_>>,
) -> Answer {
    let caller = staff.caller();
    let query = WebhookQuery {
        limit: PageSize::MAX_PAGE,
        ..WebhookQuery::default()
    };
    let hooks = state
        .read(move |shop| shop.webhooks().list(caller, &query))
        .await?;
    let body = html! {
        @if let Some(error) = &shown { (refusal(error)) }
        @if let Some(made) = &made { (shown_once(made)) }
        table {
            caption.sr-only { "Webhook subscriptions" }
            thead { tr { th scope="col" { "Id" } th scope="col" { "URL" } th scope="col" { "Events" } th scope="col" { "Delivered through" } } }
            tbody {
                @for hook in &hooks.items {
                    tr {
                        td { a href={ "/console/webhooks/" (hook.id) } { "Subscription " (hook.id) } }
                        td { (hook.url.to_string()) }
                        td { (event_list(hook)) }
                        td { (hook.delivery.delivered_through.map(|id| id.to_string()).unwrap_or_else(|| "none yet".into())) }
                    }
                }
            }
        }
        h2 { "Subscribe" }
        form.stacked method="post" action="/console/webhooks" {
            (token_field(staff))
            label for="webhook-url" { "URL (https, or http to a private address when the operator allows it)" }
            input #webhook-url name="url" type="url" required;
            fieldset {
                legend { "Events" }
                @for event_type in EventType::ALL {
                    @let field = format!("event-{}", event_type.as_str().replace('.', "-"));
                    div {
                        input id=(field) type="checkbox" name="events" value=(event_type.as_str());
                        " "
                        label for=(field) { (event_type.as_str()) }
                    }
                }
            }
            button type="submit" { "Subscribe" }
        }
    };
    Ok(html(
        status_of(&shown),
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
    #[serde(default, deserialize_with = "one_or_many")]
    events: Vec<String>,
}

/// The checked event types: one box checked is one value, which the form's envelope (its
/// fields flattened beside the form token) hands over as a string, not a list of one.
fn one_or_many<'de, D: serde::Deserializer<'de>>(fields: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Checked {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Checked::deserialize(fields)? {
        Checked::One(one) => vec![one],
        Checked::Many(many) => many,
    })
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
            .collect::<Result<Vec<_>, _>>()?;
        let new = NewWebhook {
            url: WebhookUrl::parse(fields.url.trim()).map_err(petstore_core::DomainError::from)?,
            events: EventTypes::new(types).map_err(petstore_core::DomainError::from)?,
        };
        let secret = WebhookSecret::from_random(random_bytes()?);
        let shown = secret.reveal().to_owned();
        let hook = state
            .write(move |shop| shop.webhooks().create(caller, new.clone(), &secret))
            .await?;
        Ok::<_, ApiError>((hook, shown))
    }
    .await;
    match made {
        Ok((hook, secret)) => {
            let what = format!("subscription {}", hook.id);
            let shows = Shows {
                what: &what,
                secret: &secret,
            };
            webhooks_answer(&staff, &state, None, Some(shows)).await
        }
        Err(error) => webhooks_answer(&staff, &state, Some(error), None).await,
    }
}

/// `GET /console/webhooks/{webhookId}`: a subscription and its latest delivery attempts.
pub(super) async fn webhook_page(
    staff: Staff,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Answer {
    let id: WebhookId = parsed(&id)?;
    webhook_answer(&staff, &state, id, None, None).await
}

async fn webhook_answer(
    staff: &Staff,
    state: &AppState,
    id: WebhookId,
    shown: Shown,
    note: Option<&str>,
) -> Answer {
    let caller = staff.caller();
    let query = DeliveryQuery {
        limit: PageSize::MAX_PAGE,
        ..DeliveryQuery::default()
    };
    let (hook, attempts) = state
        .read(move |shop| {
            let hooks = shop.webhooks();
            Ok((
                hooks.get(caller, id)?,
                hooks.deliveries(caller, id, &query)?.items,
            ))
        })
        .await?;
    let action = format!("/console/webhooks/{id}");
    let body = html! {
        @if let Some(error) = &shown { (refusal(error)) }
        @if let Some(note) = note { div.message role="status" { (note) } }
        dl {
            dt { "URL" } dd { (hook.url.to_string()) }
            dt { "Events" } dd { (event_list(&hook)) }
            dt { "Delivered through event" } dd { (hook.delivery.delivered_through.map(|e| e.to_string()).unwrap_or_else(|| "none yet".into())) }
            dt { "Failed attempts in a row" } dd { (hook.delivery.failed_attempts) }
        }
        h2 { "Send events again" }
        form.inline method="post" action={ (action) "/resend" } {
            (token_field(staff))
            (version_field(&hook))
            label for="resend-from" { "From event id" }
            input #resend-from name="from_event_id" type="number" min="1" required value="1";
            button.plain type="submit" { "Resend" }
        }
        h2 { "Latest delivery attempts" }
        table {
            caption.sr-only { "Delivery attempts" }
            thead { tr { th scope="col" { "Event" } th scope="col" { "Type" } th scope="col" { "Attempt" } th scope="col" { "At (UTC)" } th scope="col" { "Outcome" } } }
            tbody {
                @for attempt in attempts.iter().rev() {
                    tr {
                        td { (attempt.event_id) }
                        td { (attempt.event_type.as_str()) }
                        td { (attempt.attempt) }
                        td { (attempt.attempted_at.format("%Y-%m-%d %H:%M:%S")) }
                        td {
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
        form.inline method="post" action={ (action) "/delete" } {
            (token_field(staff))
            (version_field(&hook))
            button.danger type="submit" { "Delete subscription " (id) }
        }
    };
    let title = format!("Subscription {id}");
    Ok(html(
        status_of(&shown),
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
            .ok_or_else(|| ApiError::validation("from_event_id: must be an event id"))?;
        let condition = unchanged::<Webhook>(fields.version.clone());
        state
            .write(move |shop| shop.webhooks().resend(caller, id, from, condition.clone()))
            .await
    }
    .await;
    match resent {
        Ok(_) => {
            webhook_answer(
                &staff,
                &state,
                id,
                None,
                Some("Events from there on will be sent again."),
            )
            .await
        }
        Err(error) => webhook_answer(&staff, &state, id, Some(error), None).await,
    }
}

/// `POST /console/webhooks/{webhookId}/delete`.
pub(super) async fn delete_webhook(
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Submitted<VersionOnly>,
) -> Answer {
    let Submitted { staff, fields } = form;
    let id: WebhookId = parsed(&id)?;
    let caller = staff.caller();
    let condition = unchanged::<Webhook>(fields.version);
    let deleted = state
        .write(move |shop| shop.webhooks().delete(caller, id, condition.clone()))
        .await;
    match deleted {
        Ok(()) => Ok(see_other("/console/webhooks")),
        Err(error) => webhook_answer(&staff, &state, id, Some(error), None).await,
    }
}

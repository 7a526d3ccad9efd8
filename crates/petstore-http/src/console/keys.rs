//! The admins' keys page: API keys listed, created (the secret shown once) and revoked. Staff
//! reaching it are refused by the use cases, as the API refuses them.

use actix_web::web;
use maud::{Markup, html};
use petstore_core::{ApiKey, KeyQuery, KeySecret, Name, NewApiKey, PageSize};
use serde::Deserialize;

use super::refused::{Input, Refusal, input, message, note_at};
use super::reply::{Answer, html, parsed, status_of};
use super::session::Submitted;
use super::view::{Shows, page, shown_once, token_field};
use super::visitor::{Staff, Visit, Visitor};
use crate::auth::{generate_secret, log_key_created};
use crate::state::AppState;

/// `GET /console/keys`.
pub(super) async fn keys_page(visit: Visit, state: web::Data<AppState>) -> Answer {
    keys_answer(visit.into(), &state, None, None).await
}

async fn keys_answer(
    visitor: Visitor,
    state: &AppState,
    refused: Option<(Refusal, KeyFields)>,
    made: Option<Shows<'_>>,
) -> Answer {
    let query = KeyQuery {
        limit: PageSize::MAX_PAGE,
        ..KeyQuery::default()
    };
    let (staff, keys) = visitor
        .read(state, move |shop, caller| shop.keys().list(caller, &query))
        .await?;
    let staff = &staff;
    let refusal = refused.as_ref().map(|(refusal, _)| refusal);
    let typed = refused.as_ref().map(|(_, typed)| typed);
    let role = typed.map_or("customer", |t| t.role.as_str());
    let body = html! {
        @if let Some(made) = &made { (shown_once(made)) }
        table.cards {
            caption.sr-only { "API keys" }
            thead { tr { th scope="col" { "Id" } th scope="col" { "Name" } th scope="col" { "Role" } th scope="col" { "Starts with" } th scope="col" { "State" } } }
            tbody {
                @for key in &keys.items { (key_row(staff, key)) }
            }
        }
        h2 { "Create a key" }
        form.stacked method="post" action="/console/keys" {
            (message(refusal, "the new key"))
            (token_field(staff))
            label for="key-name" { "What it is for" }
            (input(refusal, &Input::text("key-name", "name", typed.map_or("", |t| t.name.as_str())).required().max_chars(100)))
            (note_at(refusal, "name", "key-name", "the new key"))
            label for="key-role" { "Role" }
            select #key-role name="role" {
                @for choice in ["customer", "staff", "admin"] {
                    option value=(choice) selected[choice == role] { (choice) }
                }
            }
            (note_at(refusal, "role", "key-role", "the new key"))
            button type="submit" { "Create the key" }
        }
    };
    Ok(html(
        status_of(refusal),
        page(staff, "/console/keys", "API keys", body),
    ))
}

fn key_row(staff: &Staff, key: &ApiKey) -> Markup {
    html! {
        tr {
            td data-label="Id" { (key.id) }
            td data-label="Name" { (key.name.as_str()) }
            td data-label="Role" { (key.role.as_str()) }
            td data-label="Starts with" { code { (key.prefix) "…" } }
            td data-label="State" {
                @if let Some(at) = key.revoked_at {
                    "revoked " (at.format("%Y-%m-%d %H:%M"))
                } @else if staff.caller().key() == Some(key.id) {
                    "active (this session's key)"
                } @else {
                    "active "
                    a.button.danger href={ "/console/keys/" (key.id) "/revoke" } { "Revoke " (key.name.as_str()) "…" }
                }
            }
        }
    }
}

/// The new key form's fields.
#[derive(Debug, Deserialize)]
pub(super) struct KeyFields {
    name: String,
    role: String,
}

/// `POST /console/keys`: the answer shows the new key's secret, once.
pub(super) async fn create_key(state: web::Data<AppState>, form: Submitted<KeyFields>) -> Answer {
    let Submitted { staff, fields } = form;
    let caller = staff.caller();
    let made = async {
        let new = NewApiKey {
            name: Name::parse(&fields.name)
                .map_err(|e| Refusal::at("name")(petstore_core::DomainError::from(e).into()))?,
            role: parsed(&fields.role).map_err(Refusal::at("role"))?,
        };
        let secret: KeySecret = generate_secret()?;
        let shown = secret.reveal().to_owned();
        let key = state
            .write(move |shop| shop.keys().create(caller, new.clone(), &secret))
            .await?;
        log_key_created(&key, caller);
        Ok::<_, Refusal>((key, shown))
    }
    .await;
    match made {
        Ok((key, secret)) => {
            let what = format!("key \u{201c}{}\u{201d}", key.name.as_str());
            let shows = Shows {
                what: &what,
                kept: "the service keeps only its hash",
                secret: &secret,
            };
            keys_answer(staff.into(), &state, None, Some(shows)).await
        }
        Err(refusal) => keys_answer(staff.into(), &state, Some((refusal, fields)), None).await,
    }
}

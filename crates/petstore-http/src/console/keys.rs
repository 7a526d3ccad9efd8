//! The admins' keys page: API keys listed, created (the secret shown once) and revoked. Staff
//! reaching it are refused by the use cases, as the API refuses them.

use actix_web::web;
use maud::{Markup, html};
use petstore_core::{ApiKey, KeyId, KeyQuery, KeySecret, Name, NewApiKey, PageSize};
use serde::Deserialize;

use super::reply::{Answer, Shown, VersionOnly, html, parsed, see_other, status_of, unchanged};
use super::session::{Staff, Submitted};
use super::view::{Shows, page, refusal, shown_once, token_field, version_field};
use crate::auth::{generate_secret, key_revoked, log_key_created};
use crate::error::ApiError;
use crate::state::AppState;

/// `GET /console/keys`.
pub(super) async fn keys_page(staff: Staff, state: web::Data<AppState>) -> Answer {
    keys_answer(&staff, &state, None, None).await
}

async fn keys_answer(
    staff: &Staff,
    state: &AppState,
    shown: Shown,
    made: Option<Shows<'_>>,
) -> Answer {
    let caller = staff.caller();
    let query = KeyQuery {
        limit: PageSize::MAX_PAGE,
        ..KeyQuery::default()
    };
    let keys = state
        .read(move |shop| shop.keys().list(caller, &query))
        .await?;
    let body = html! {
        @if let Some(error) = &shown { (refusal(error)) }
        @if let Some(made) = &made { (shown_once(made)) }
        table {
            caption.sr-only { "API keys" }
            thead { tr { th scope="col" { "Id" } th scope="col" { "Name" } th scope="col" { "Role" } th scope="col" { "Starts with" } th scope="col" { "State" } } }
            tbody {
                @for key in &keys.items { (key_row(staff, key)) }
            }
        }
        h2 { "Create a key" }
        form.stacked method="post" action="/console/keys" {
            (token_field(staff))
            label for="key-name" { "What it is for" }
            input #key-name name="name" required maxlength="100";
            label for="key-role" { "Role" }
            select #key-role name="role" {
                option value="customer" { "customer" }
                option value="staff" { "staff" }
                option value="admin" { "admin" }
            }
            button type="submit" { "Create the key" }
        }
    };
    Ok(html(
        status_of(&shown),
        page(staff, "/console/keys", "API keys", body),
    ))
}

fn key_row(staff: &Staff, key: &ApiKey) -> Markup {
    html! {
        tr {
            td { (key.id) }
            td { (key.name.as_str()) }
            td { (key.role.as_str()) }
            td { code { (key.prefix) "…" } }
            td {
                @if let Some(at) = key.revoked_at {
                    "revoked " (at.format("%Y-%m-%d %H:%M"))
                } @else if staff.caller().key() == Some(key.id) {
                    "active (this session's key)"
                } @else {
                    form.inline method="post" action={ "/console/keys/" (key.id) "/revoke" } {
                        (token_field(staff))
                        (version_field(key))
                        button.danger type="submit" { "Revoke " (key.name.as_str()) }
                    }
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
            name: Name::parse(&fields.name).map_err(petstore_core::DomainError::from)?,
            role: parsed(&fields.role)?,
        };
        let secret: KeySecret = generate_secret()?;
        let shown = secret.reveal().to_owned();
        let key = state
            .write(move |shop| shop.keys().create(caller, new.clone(), &secret))
            .await?;
        log_key_created(&key, caller);
        Ok::<_, ApiError>((key, shown))
    }
    .await;
    match made {
        Ok((key, secret)) => {
            let what = format!("key \u{201c}{}\u{201d}", key.name.as_str());
            let shows = Shows {
                what: &what,
                secret: &secret,
            };
            keys_answer(&staff, &state, None, Some(shows)).await
        }
        Err(error) => keys_answer(&staff, &state, Some(error), None).await,
    }
}

/// `POST /console/keys/{keyId}/revoke`: the key authenticates nothing from now on, and its
/// console sessions end.
pub(super) async fn revoke_key(
    state: web::Data<AppState>,
    id: web::Path<String>,
    form: Submitted<VersionOnly>,
) -> Answer {
    let Submitted { staff, fields } = form;
    let id: KeyId = parsed(&id)?;
    let caller = staff.caller();
    let condition = unchanged::<ApiKey>(fields.version);
    let revoked = state
        .write(move |shop| shop.keys().revoke(caller, id, condition.clone()))
        .await;
    match revoked {
        Ok(()) => {
            key_revoked(&state, id, caller);
            Ok(see_other("/console/keys"))
        }
        Err(error) => keys_answer(&staff, &state, Some(error), None).await,
    }
}

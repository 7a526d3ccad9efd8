//! What every console page shares: the layout, the navigation, messages, and the pages that
//! belong to no section (signing in, a failure).

use maud::{DOCTYPE, Markup, PreEscaped, Render, html};

use petstore_core::Role;

use super::assets::{FAVICON, HTMX, STYLE};
use super::refused;
use crate::conditional::push_version;
use crate::error::ApiError;
use crate::json::WriteJson;

/// htmx's settings: no `eval` (the policy forbids it anyway), no inline style of its own, no
/// copy of pages in the browser's storage (they hold form tokens, and a new key's secret),
/// requests to this origin only, and refusals (4xx) swapped in like answers, since they
/// carry the message to show.
const HTMX_CONFIG: &str = r#"{"allowEval":false,"allowScriptTags":false,"includeIndicatorStyles":false,"historyCacheSize":0,"refreshOnHistoryMiss":true,"selfRequestsOnly":true,"responseHandling":[{"code":"204","swap":false},{"code":"[23]..","swap":true},{"code":"[45]..","swap":true,"error":true}]}"#;

/// The sections of the navigation: path, label, and whether only admins see it.
const SECTIONS: &[(&str, &str, bool)] = &[
    ("/console/", "Today", false),
    ("/console/pets", "Pets", false),
    ("/console/categories", "Categories", false),
    ("/console/stock", "Stock", false),
    ("/console/orders", "Orders", false),
    ("/console/events", "Events", false),
    ("/console/keys", "Keys", true),
    ("/console/webhooks", "Webhooks", true),
];

/// What a page needs of the session it is drawn for: the navigation shows the sections its
/// role may use, and every form carries its token. (The session's extractor, `Staff`, is one;
/// the views sit below it and name none of its workings.)
pub(super) trait Viewer {
    /// The role of the key the session acts as.
    fn role(&self) -> Role;
    /// The token this session's forms carry.
    fn form_token(&self) -> &str;
    /// What the change before this page said it did, to say once.
    fn said(&self) -> Option<&str>;
}

fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            meta name="htmx-config" content=(HTMX_CONFIG);
            title { (title) " · Pet store console" }
            link rel="stylesheet" href=(STYLE.url());
            link rel="icon" type="image/svg+xml" href=(FAVICON.url());
            script src=(HTMX.url()) defer {}
        }
    }
}

/// A page of a signed-in session: `current` is the section it belongs to.
pub(super) fn page(viewer: &impl Viewer, current: &str, title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            // Links and forms load the next page into this one (no flash, focus kept at
            // the top); they work the same without script.
            body hx-boost="true" {
                a.skip href="#main" { "Skip to the content" }
                header.top {
                    nav aria-label="Console" {
                        ul {
                            @for (path, label, admin_only) in SECTIONS {
                                @if !*admin_only || viewer.role() == Role::Admin {
                                    li {
                                        @if *path == current {
                                            a href=(path) aria-current="page" { (label) }
                                        } @else {
                                            a href=(path) { (label) }
                                        }
                                    }
                                }
                            }
                        }
                    }
                    span.who { "Signed in as " (viewer.role()) }
                    form method="post" action="/console/sign-out" {
                        (token_field(viewer))
                        button.plain type="submit" { "Sign out" }
                    }
                }
                main #main {
                    h1 { (title) }
                    @if let Some(said) = viewer.said() {
                        div.message role="status" { (said) }
                    }
                    (body)
                }
            }
        }
    }
}

/// The hidden field every form of the session carries. The token is hex digits: written as
/// it is, with no escaping to do (a page of 100 rows has 100 of them).
pub(super) fn token_field(viewer: &impl Viewer) -> Markup {
    html! { input type="hidden" name="form_token" value=(PreEscaped(viewer.form_token())); }
}

/// The hidden field of a form that changes `value`: the version (its entity tag's hex
/// digits) the form showed, which the change must still find (`reply::unchanged`).
pub(super) fn version_field<T: WriteJson>(value: &T) -> impl Render + '_ {
    VersionField(value)
}

/// [`version_field`], written straight into the page: the version is hex digits, with no
/// escaping to do.
struct VersionField<'a, T>(&'a T);

impl<T: WriteJson> Render for VersionField<'_, T> {
    fn render_to(&self, page: &mut String) {
        page.push_str(r#"<input type="hidden" name="version" value=""#);
        push_version(self.0, page);
        page.push_str(r#"">"#);
    }
}

/// The version of `value` a form carries: the hex digits of the entity tag the API gives it.
pub(super) fn version_of<T: WriteJson>(value: &T) -> String {
    let mut version = String::with_capacity(32);
    push_version(value, &mut version);
    version
}

/// A secret just made, to show once: what it is of, how the service keeps it, and the
/// secret.
pub(super) struct Shows<'a> {
    pub(super) what: &'a str,
    /// How it is kept, as a clause: why it cannot be shown again.
    pub(super) kept: &'a str,
    pub(super) secret: &'a str,
}

pub(super) fn shown_once(shows: &Shows<'_>) -> Markup {
    html! {
        div.message role="status" {
            p { "Made the " (shows.what) ". Its secret is shown this once (" (shows.kept) "): copy it now." }
            p.secret { (shows.secret) }
        }
    }
}

/// A change made in place (a table's row swapped): focused, so that the keyboard's place
/// and a screen reader's stay with the row that changed.
pub(super) fn done(text: &str) -> Markup {
    html! { div.message role="status" tabindex="-1" autofocus { (text) } }
}

/// A failure with no page of its own to show it on: a page that does not exist, one the
/// session's role may not open, a service that cannot answer now.
pub(super) fn error_page(error: &ApiError) -> Markup {
    let title = match error.status().as_u16() {
        404 => "Not found",
        403 => "Not allowed",
        _ => "Not done",
    };
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body {
                main #main {
                    h1 { (title) }
                    (refused::page_alert(error))
                    p { a href="/console/" { "Back to the console" } }
                }
            }
        }
    }
}

/// The sign-in page, with a note (signed out) or a refusal.
pub(super) fn sign_in_page(note: Option<&str>, refused: Option<&str>) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head("Sign in"))
            body {
                main #main {
                    h1 { "Sign in to the pet store console" }
                    @if let Some(note) = note {
                        div.message role="status" { (note) }
                    }
                    @if let Some(refused) = refused {
                        div.message.error role="alert" { (refused) }
                    }
                    form.stacked method="post" action="/console/sign-in" {
                        label for="key" { "API key (staff or admin)" }
                        input #key name="key" type="password" autocomplete="off" required
                            autofocus;
                        button type="submit" { "Sign in" }
                    }
                    p.muted {
                        "The key is exchanged for a session; it is not kept in this browser."
                    }
                }
            }
        }
    }
}

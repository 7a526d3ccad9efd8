//! A refused change as the console shows it: in the shop's words, naming what it was about
//! and what to do next, beside the field it concerns, with the API's code kept small for
//! whoever reports it. The status stays the API's.

use maud::{Markup, html};

use crate::error::{ApiError, ErrorCode};

/// A refusal to show on the page its form came from.
#[derive(Debug)]
pub(super) struct Refusal {
    error: ApiError,
    /// The form's field it is about, if one.
    field: Option<&'static str>,
}

impl Refusal {
    /// A refusal of what was typed into `field`.
    pub(super) fn at(field: &'static str) -> impl FnOnce(ApiError) -> Self {
        move |error| Self {
            error,
            field: Some(field),
        }
    }

    /// The API's refusal.
    pub(super) fn error(&self) -> &ApiError {
        &self.error
    }

    /// Whether it is about `field`.
    pub(super) fn is_at(&self, field: &str) -> bool {
        self.field == Some(field)
    }

    /// The same refusal, put beside the field that `fields` names for its code (a name
    /// already taken: the name), if it is not beside one yet.
    #[must_use]
    pub(super) fn placed(mut self, fields: &[(ErrorCode, &'static str)]) -> Self {
        if self.field.is_none() {
            self.field = fields
                .iter()
                .find(|(code, _)| *code == self.error.code())
                .map(|(_, field)| *field);
        }
        self
    }
}

impl From<ApiError> for Refusal {
    fn from(error: ApiError) -> Self {
        Self { error, field: None }
    }
}

impl From<petstore_core::DomainError> for Refusal {
    fn from(error: petstore_core::DomainError) -> Self {
        ApiError::from(error).into()
    }
}

/// Whether `refused` is about `field`: its input is then marked invalid, described by the
/// note beside it, and focused.
fn is_at(refused: Option<&Refusal>, field: &str) -> bool {
    refused.is_some_and(|refusal| refusal.is_at(field))
}

/// An input of a form, as [`input`] draws it.
pub(super) struct Input<'a> {
    id: &'a str,
    name: &'static str,
    kind: &'static str,
    value: &'a str,
    max_chars: Option<u32>,
    min: Option<u32>,
    required: bool,
}

impl<'a> Input<'a> {
    /// A text input `id` for the form's field `name`, holding `value`.
    pub(super) fn text(id: &'a str, name: &'static str, value: &'a str) -> Self {
        Self {
            id,
            name,
            kind: "text",
            value,
            max_chars: None,
            min: None,
            required: false,
        }
    }

    /// A count of at least 1.
    pub(super) fn count(id: &'a str, name: &'static str, value: &'a str) -> Self {
        Self {
            kind: "number",
            min: Some(1),
            ..Self::text(id, name, value).required()
        }
    }

    /// A day.
    pub(super) fn date(id: &'a str, name: &'static str, value: &'a str) -> Self {
        Self {
            kind: "date",
            ..Self::text(id, name, value)
        }
    }

    /// An address.
    pub(super) fn url(id: &'a str, name: &'static str, value: &'a str) -> Self {
        Self {
            kind: "url",
            ..Self::text(id, name, value).required()
        }
    }

    /// The same input, which the form needs filled.
    #[must_use]
    pub(super) fn required(self) -> Self {
        Self {
            required: true,
            ..self
        }
    }

    /// The same number input, from `min` up.
    #[must_use]
    pub(super) fn min(self, min: u32) -> Self {
        Self {
            min: Some(min),
            ..self
        }
    }

    /// The same input, of at most `chars` characters.
    #[must_use]
    pub(super) fn max_chars(self, chars: u32) -> Self {
        Self {
            max_chars: Some(chars),
            ..self
        }
    }
}

/// `field` as an input: when `refused` is about it, marked invalid, described by its note
/// ([`note_at`] with the same id) and focused, so the page opens on what to correct.
pub(super) fn input(refused: Option<&Refusal>, field: &Input<'_>) -> Markup {
    let bad = is_at(refused, field.name);
    html! {
        input id=(field.id) name=(field.name) type=(field.kind) value=(field.value)
            required[field.required] maxlength=[field.max_chars] min=[field.min]
            aria-invalid=[bad.then_some("true")]
            aria-describedby=[bad.then(|| format!("{}-error", field.id))]
            autofocus[bad];
    }
}

/// The note beside the input `id` when `refused` is about `field` (of `subject`, as
/// [`in_shop_words`] names it): a wrong value's reason alone, since the field says what it
/// is about.
pub(super) fn note_at(refused: Option<&Refusal>, field: &str, id: &str, subject: &str) -> Markup {
    html! {
        @if let Some(refusal) = refused.filter(|r| r.is_at(field)) {
            p.field-error id={ (id) "-error" } role="alert" {
                (in_shop_words(&refusal.error, subject)) " " (code(&refusal.error))
            }
        }
    }
}

/// The refusal at the top of its form, when it is about no one field: focused, so that a
/// keyboard or a screen reader lands on it, and the page scrolls to it.
pub(super) fn message(refused: Option<&Refusal>, subject: &str) -> Markup {
    html! {
        @if let Some(refusal) = refused.filter(|r| r.field.is_none()) {
            (alert(&refusal.error, subject))
        }
    }
}

/// `error` as a message of its own, about `subject`.
pub(super) fn alert(error: &ApiError, subject: &str) -> Markup {
    html! {
        div.message.error role="alert" tabindex="-1" autofocus {
            (in_shop_words(error, subject)) " " (code(error))
        }
    }
}

/// A failure with no form behind it, for a page of its own: what is missing is named as the
/// API names it ("pet 999 not found"; an address the console has no page for), since
/// nothing says it ever existed; any other failure in the shop's words.
pub(super) fn page_alert(error: &ApiError) -> Markup {
    if error.code() != ErrorCode::NotFound {
        return alert(error, "this page");
    }
    html! {
        div.message.error role="alert" tabindex="-1" autofocus {
            (capital(error.message())) "." " " (code(error))
        }
    }
}

fn code(error: &ApiError) -> Markup {
    html! { span.muted { "(" code { (error.code().as_str()) } ")" } }
}

/// A field's reason: the API says "name: must …", the field beside it says "Must …".
fn field_reason(error: &ApiError) -> String {
    let message = error.message();
    let reason = message
        .split_once(": ")
        .map_or(message, |(_, reason)| reason);
    let mut chars = reason.chars();
    chars.next().map_or_else(String::new, |first| {
        let mut said: String = first.to_uppercase().collect();
        said.push_str(chars.as_str());
        if !said.ends_with('.') {
            said.push('.');
        }
        said
    })
}

/// What `error` means in the shop's words, about `subject` ("Rex", "the category Dogs",
/// "order 7"), and what to do next. A code with no words of its own keeps the API's message.
pub(super) fn in_shop_words(error: &ApiError, subject: &str) -> String {
    use ErrorCode as C;
    match error.code() {
        C::PreconditionFailed => format!(
            "Someone else changed {subject} since this page was read. It is shown as it is \
             now: check it, then make your change again."
        ),
        C::NotFound => format!("{} no longer exists: someone deleted it.", capital(subject)),
        C::CategoryExists => {
            "A category already has this name: choose another, or use that category.".into()
        }
        C::CategoryInUse => format!(
            "{} still has pets: move them to another category, or delete them, first.",
            capital(subject)
        ),
        C::PetHasOpenOrders => format!(
            "{} is in open orders: complete or cancel them on the Orders page first.",
            capital(subject)
        ),
        C::PetNotAvailable => format!(
            "{} cannot be ordered: its status is not available. Change its status first.",
            capital(subject)
        ),
        C::InsufficientStock => format!(
            "There are not enough units of {subject} in stock for this: order fewer, or add \
             stock on the Stock page first."
        ),
        C::PriceMissing => format!("{} has no price yet: set one first.", capital(subject)),
        C::OrderNotCancellable => format!(
            "{} is complete: a complete order cannot be cancelled.",
            capital(subject)
        ),
        C::ForbiddenTarget => "This address is a private or local one, which this service \
             does not deliver to: use a public address, or ask the operator to allow private \
             ones."
            .into(),
        C::Forbidden => format!("{} Ask an admin if you need it.", capital(error.message())),
        C::ValidationFailed | C::InvalidParameter => field_reason(error),
        _ => capital(error.message()),
    }
}

/// `text` with its first letter in capitals.
fn capital(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect::<String>()
    })
}

#[cfg(test)]
mod tests {
    use actix_web::http::StatusCode;

    use super::*;

    #[test]
    fn the_shop_s_words_name_the_thing_and_what_to_do() {
        let stale = ApiError::new(
            StatusCode::PRECONDITION_FAILED,
            ErrorCode::PreconditionFailed,
            "the pet changed since it was read",
        );
        let said = in_shop_words(&stale, "Rex");
        assert!(
            said.contains("changed Rex") && said.contains("again"),
            "{said}"
        );
        let in_use = ApiError::new(
            StatusCode::CONFLICT,
            ErrorCode::CategoryInUse,
            "category 1 still has pets",
        );
        assert_eq!(
            in_shop_words(&in_use, "the category Dogs"),
            "The category Dogs still has pets: move them to another category, or delete \
             them, first."
        );
    }

    #[test]
    fn a_missing_page_is_named_as_the_api_names_it() {
        let missing = ApiError::not_found("the console has no page /console/nowhere");
        let html = page_alert(&missing).into_string();
        assert!(
            html.contains("The console has no page /console/nowhere."),
            "{html}"
        );
        assert!(!html.contains("deleted"), "{html}");
        let refused = ApiError::new(
            StatusCode::FORBIDDEN,
            ErrorCode::Forbidden,
            "a staff key may not do this",
        );
        assert!(page_alert(&refused).into_string().contains("Ask an admin"));
    }

    #[test]
    fn a_field_s_note_is_its_reason_alone() {
        let bad = ApiError::validation("name: must be 1 to 100 characters");
        assert_eq!(field_reason(&bad), "Must be 1 to 100 characters.");
        let placed = Refusal::from(bad).placed(&[(ErrorCode::ValidationFailed, "name")]);
        assert!(placed.is_at("name"));
        let html = note_at(Some(&placed), "name", "pet-name", "Rex").into_string();
        assert!(html.contains(r#"id="pet-name-error""#), "{html}");
        assert!(message(Some(&placed), "Rex").into_string().is_empty());
    }
}

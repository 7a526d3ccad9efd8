//! What a console handler answers: a page, a part of one (htmx), or a redirect; and the one
//! mapping of failures to pages.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, ResponseError};
use maud::Markup;

use super::refused::Refusal;
use super::view;
use crate::error::ApiError;

/// The sign-in page, where a request of no open session is sent.
pub(super) const SIGN_IN: &str = "/console/sign-in";

/// A page's answer.
pub(super) type Answer = Result<HttpResponse, ConsoleError>;

/// An HTML answer with `status`.
pub(super) fn html(status: StatusCode, markup: Markup) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .body(markup.into_string())
}

/// After a change: back to the page that shows it (Post/Redirect/Get), so reloading the page
/// does not make the change again.
pub(super) fn see_other(location: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, location.to_owned()))
        .finish()
}

/// The cookie that carries what a change did across its redirect, for the next page to say
/// once ([`said`]); the console's layer takes it away when a page has shown it.
pub(super) const SAID: &str = "petstore_console_said";

/// The longest message [`SAID`] carries: a sentence with a name or two.
const SAID_MAX_BYTES: usize = 600;

/// [`see_other`], with `text` for the page it leads to to say: the change went through.
pub(super) fn see_other_saying(location: &str, text: &str) -> HttpResponse {
    let mut end = text.len().min(SAID_MAX_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    // Form-encoded, the text is letters, digits, `%XX` and `+`: all allowed in a cookie.
    let value = serde_html_form::to_string([("m", &text[..end])]).unwrap_or_default();
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, location.to_owned()))
        .insert_header((
            header::SET_COOKIE,
            format!("{SAID}={value}; Path=/console/; HttpOnly; SameSite=Strict; Max-Age=60"),
        ))
        .finish()
}

/// What the change before this page said ([`see_other_saying`]), if the request carries it.
pub(super) fn said(req: &HttpRequest) -> Option<String> {
    let pairs: Vec<(String, String)> = serde_html_form::from_str(cookie(req, SAID)?).ok()?;
    pairs.into_iter().next().map(|(_, text)| text)
}

/// The value of the request's cookie `name`, if it sends one.
pub(super) fn cookie<'r>(req: &'r HttpRequest, name: &str) -> Option<&'r str> {
    let cookies = req.headers().get(header::COOKIE)?.to_str().ok()?;
    cookies
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find_map(|(named, value)| (named == name).then_some(value))
}

/// The `Set-Cookie` value that takes [`SAID`] away, once a page has said it.
pub(super) const SAID_TAKEN: &str =
    "petstore_console_said=; Path=/console/; HttpOnly; SameSite=Strict; Max-Age=0";

/// Whether htmx sent the request (it then swaps the answer into the page).
pub(super) fn is_htmx(req: &HttpRequest) -> bool {
    req.headers().contains_key("hx-request")
}

/// Whether htmx asked for part of a page (a table's row), not for a whole page as a boosted
/// link or form does.
pub(super) fn wants_row(req: &HttpRequest) -> bool {
    is_htmx(req) && !req.headers().contains_key("hx-boosted")
}

/// Why a console request was not served.
#[derive(Debug, thiserror::Error)]
pub(super) enum ConsoleError {
    /// No open session: signed out, expired, or its key revoked. The browser goes to the
    /// sign-in page.
    #[error("signed out")]
    SignedOut {
        /// Whether htmx asked (it is told to load the sign-in page as a whole).
        htmx: bool,
    },
    /// Refused the way the API refuses it (the API's status, code and message).
    #[error("{0}")]
    Api(#[from] ApiError),
}

impl From<petstore_core::DomainError> for ConsoleError {
    fn from(error: petstore_core::DomainError) -> Self {
        Self::Api(error.into())
    }
}

impl ResponseError for ConsoleError {
    fn status_code(&self) -> StatusCode {
        match self {
            ConsoleError::SignedOut { .. } => StatusCode::SEE_OTHER,
            ConsoleError::Api(error) => error.status(),
        }
    }

    fn error_response(&self) -> HttpResponse {
        match self {
            ConsoleError::SignedOut { htmx: false } => see_other(SIGN_IN),
            ConsoleError::SignedOut { htmx: true } => HttpResponse::Ok()
                .insert_header(("hx-redirect", HeaderValue::from_static(SIGN_IN)))
                .finish(),
            ConsoleError::Api(error) => {
                let mut page = html(error.status(), view::error_page(error));
                // What the API's answer would carry, `Retry-After` after a rate limit among it.
                for (name, value) in error.headers() {
                    page.headers_mut().insert(name.clone(), value.clone());
                }
                page
            }
        }
    }
}

/// A form's text read by the domain's own rule for the value (a name, an id, a status), so
/// the page refuses exactly what the API refuses, with the same message.
pub(super) fn parsed<T: std::str::FromStr<Err = petstore_core::ValidationError>>(
    text: &str,
) -> Result<T, ApiError> {
    text.trim()
        .parse()
        .map_err(|error: petstore_core::ValidationError| {
            ApiError::from(petstore_core::DomainError::from(error))
        })
}

/// An optional field of a form or a query: absent when empty, else read as [`parsed`] reads
/// it.
pub(super) fn parsed_if_given<T: std::str::FromStr<Err = petstore_core::ValidationError>>(
    text: &str,
) -> Result<Option<T>, ApiError> {
    if text.is_empty() {
        Ok(None)
    } else {
        parsed(text).map(Some)
    }
}

/// The status of a page drawn again around `refused`: the refusal's, or 200.
pub(super) fn status_of(refused: Option<&Refusal>) -> StatusCode {
    refused.map_or(StatusCode::OK, |refusal| refusal.error().status())
}

/// The status of a form of rows drawn again: its general refusal's, else the highest of its
/// refused rows' (the same page whatever order the rows were judged in), else 200.
pub(super) fn status_of_rows<'a>(
    general: Option<&Refusal>,
    rows: impl IntoIterator<Item = &'a ApiError>,
) -> StatusCode {
    match general {
        Some(refusal) => refusal.error().status(),
        None => rows
            .into_iter()
            .map(ApiError::status)
            .max()
            .unwrap_or(StatusCode::OK),
    }
}

/// The condition a form's change holds to: the resource is still as the form showed it (its
/// entity tag, as the API's `If-Match` compares it), so of two people editing from one state, the second is
/// refused with `precondition_failed` instead of undoing the first's change unseen.
pub(super) fn unchanged<T: crate::json::WriteJson>(version: String) -> impl Fn(&T) -> bool + Clone {
    move |now: &T| view::version_of(now) == version
}

/// A count of units in words: "1 unit", "3 units".
pub(super) fn units(count: u32) -> String {
    if count == 1 {
        "1 unit".to_owned()
    } else {
        format!("{count} units")
    }
}

/// A form that names the version it was read at, and nothing else.
#[derive(Debug, serde::Deserialize)]
pub(super) struct VersionOnly {
    /// The entity tag of the resource as the form showed it.
    #[serde(default)]
    pub(super) version: String,
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    fn carried(answer: &HttpResponse) -> (String, HttpRequest) {
        let cookie = answer
            .headers()
            .get(header::SET_COOKIE)
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        let pair = cookie.split(';').next().unwrap().to_owned();
        let next = TestRequest::default()
            .insert_header((header::COOKIE, format!("other=1; {pair}")))
            .to_http_request();
        (cookie, next)
    }

    #[test]
    fn what_a_change_said_rides_its_redirect_to_the_next_page() {
        let text = "Deleted Rex; the “100% good” dog, = & + all.";
        let answer = see_other_saying("/console/", text);
        assert_eq!(answer.status(), StatusCode::SEE_OTHER);
        let (cookie, next) = carried(&answer);
        for attribute in [
            "Path=/console/",
            "HttpOnly",
            "SameSite=Strict",
            "Max-Age=60",
        ] {
            assert!(cookie.contains(attribute), "{cookie}");
        }
        assert_eq!(said(&next).as_deref(), Some(text));
        assert!(SAID_TAKEN.starts_with(&format!("{SAID}=;")) && SAID_TAKEN.contains("Max-Age=0"));
        assert_eq!(said(&TestRequest::default().to_http_request()), None);
    }

    #[test]
    fn a_long_sentence_is_cut_between_characters() {
        let (_, next) = carried(&see_other_saying("/console/", &"é".repeat(400)));
        let kept = said(&next).unwrap();
        assert_eq!(kept, "é".repeat(SAID_MAX_BYTES / 2));
    }
}

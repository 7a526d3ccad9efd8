//! Signing in and out, the session's cookie, and [`Submitted`] (an open session, its form
//! token and this origin), which every change starts with. A page starts with a
//! [`Visit`](super::visitor::Visit), whose read looks the session up.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{FromRequest, HttpRequest, HttpResponse, web};
use futures_util::StreamExt as _;
use petstore_core::{KeySecret, SessionToken};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::reply::{Answer, ConsoleError, SIGN_IN, html, see_other};
use super::request::{session_cookie, settings, state};
use super::view;
use super::visitor::Staff;
use crate::auth::{self, random_bytes};
use crate::error::{ApiError, ErrorCode};
use crate::rate_limit::{Bucket, RateLimits};

/// The largest form the console accepts: a pet's or a webhook's fields, with room to spare.
const MAX_FORM_BYTES: usize = 16 * 1024;

/// Takes one request from `bucket` of the limiter `/v1` uses: a sign-in from the client
/// address's allowance (there is no key yet), a change from its key's, so that neither door
/// lets a client past the other's limit. A refusal is the API's 429, shown as a page saying
/// when to try again, with `Retry-After`.
fn take_rate(req: &HttpRequest, bucket: &Bucket) -> Result<(), ConsoleError> {
    auth::take_rate(req.app_data::<RateLimits>(), state(req)?.metrics(), bucket)?;
    Ok(())
}

/// A form posted by an open session, from this origin, with the session's form token: the
/// only way a console handler changes anything.
#[derive(Debug)]
pub(super) struct Submitted<T> {
    /// The session.
    pub(super) staff: Staff,
    /// The form's fields.
    pub(super) fields: T,
}

/// A form as posted: the session's form token beside its own fields.
#[derive(Deserialize)]
struct Envelope<T> {
    #[serde(default)]
    form_token: String,
    #[serde(flatten)]
    fields: T,
}

/// A field a form may repeat (a box per event type, a value per row): its fields reach
/// [`Submitted`] flattened beside the form token, where a field sent once is one value and
/// one sent again a list.
pub(super) fn one_or_more<'de, D: serde::Deserializer<'de>>(
    fields: D,
) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Sent {
        One(String),
        More(Vec<String>),
    }
    Ok(match Sent::deserialize(fields)? {
        Sent::One(value) => vec![value],
        Sent::More(values) => values,
    })
}

/// 403 for a change that does not show it comes from the console's own page.
fn cross_site(message: &str) -> ConsoleError {
    ApiError::new(StatusCode::FORBIDDEN, ErrorCode::Forbidden, message).into()
}

/// Refuses a request a browser says came from another site. Browsers send `Origin` with
/// every `POST` and `Sec-Fetch-Site` with every request; a client that sends neither is not a
/// browser page, and the form token still has to be right.
fn check_origin(req: &HttpRequest) -> Result<(), ConsoleError> {
    let headers = req.headers();
    if let Some(site) = headers.get("sec-fetch-site")
        && !matches!(site.as_bytes(), b"same-origin" | b"none")
    {
        return Err(cross_site("this form was sent from another site"));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let info = req.connection_info();
        let own = format!("{}://{}", info.scheme(), info.host());
        if origin.as_bytes() != own.as_bytes() {
            return Err(cross_site("this form was sent from another origin"));
        }
    }
    Ok(())
}

/// The body of a form, at most [`MAX_FORM_BYTES`].
async fn form_body(mut payload: Payload) -> Result<Vec<u8>, ConsoleError> {
    let mut body = Vec::new();
    while let Some(chunk) = payload.next().await {
        let chunk =
            chunk.map_err(|_| ApiError::invalid_parameter("the form did not arrive whole"))?;
        if body.len() + chunk.len() > MAX_FORM_BYTES {
            return Err(ApiError::payload_too_large(MAX_FORM_BYTES).into());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn parse_form<T: DeserializeOwned>(body: &[u8]) -> Result<Envelope<T>, ConsoleError> {
    serde_html_form::from_bytes(body)
        .map_err(|error| ApiError::validation(format!("the form: {error}")).into())
}

impl<T: DeserializeOwned + 'static> FromRequest for Submitted<T> {
    type Error = ConsoleError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ConsoleError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let req = req.clone();
        let payload = payload.take();
        Box::pin(async move {
            check_origin(&req)?;
            let staff = Staff::resume(&req).await?;
            if let Some(key) = staff.caller().key() {
                take_rate(&req, &Bucket::Key(key))?;
            }
            let form: Envelope<T> = parse_form(&form_body(payload).await?)?;
            if !staff.accepts_form_token(&form.form_token) {
                return Err(cross_site(
                    "the form's token is missing or not this session's; reload the page",
                ));
            }
            Ok(Self {
                staff,
                fields: form.fields,
            })
        })
    }
}

/// `GET /console/sign-in`.
pub(super) async fn sign_in_page(req: HttpRequest) -> HttpResponse {
    let note = match req.query_string() {
        "ended" => Some("You have signed out."),
        _ => None,
    };
    html(StatusCode::OK, view::sign_in_page(note, None))
}

/// The sign-in form.
#[derive(Debug, Deserialize)]
pub(super) struct SignInForm {
    key: String,
}

/// `POST /console/sign-in`: exchanges an API key of staff or an admin for a session.
pub(super) async fn sign_in(req: HttpRequest, payload: web::Payload) -> Answer {
    check_origin(&req)?;
    take_rate(&req, &Bucket::address(req.peer_addr()))?;
    let body = form_body(payload.into_inner()).await?;
    let form: SignInForm = serde_html_form::from_bytes(&body)
        .map_err(|error| ApiError::validation(format!("the form: {error}")))?;
    let refused = |status, message: &str| Ok(html(status, view::sign_in_page(None, Some(message))));
    let Ok(secret) = KeySecret::parse(form.key.trim()) else {
        return refused(
            StatusCode::UNAUTHORIZED,
            "That is not an API key: a key is 32 to 256 visible characters.",
        );
    };
    let token = SessionToken::from_random(random_bytes()?);
    let lifetime = settings(&req).lifetime;
    let state = state(&req)?;
    let opening = token.clone();
    let opened = state
        .write(move |shop| shop.sessions().open(&secret, &opening, &lifetime))
        .await;
    match opened {
        Ok(Some(_)) => Ok(HttpResponse::SeeOther()
            .insert_header((header::LOCATION, "/console/"))
            .insert_header((header::SET_COOKIE, session_cookie(&req, Some(&token))))
            .finish()),
        Ok(None) => refused(
            StatusCode::UNAUTHORIZED,
            "This key is not valid: unknown or revoked.",
        ),
        Err(error) if error.code() == ErrorCode::Forbidden => refused(
            StatusCode::FORBIDDEN,
            "A customer's key cannot sign in to the console: use a staff or admin key.",
        ),
        Err(error) => Err(error.into()),
    }
}

/// `POST /console/sign-out`: ends the session, here and on every node.
pub(super) async fn sign_out(req: HttpRequest, form: Submitted<NoFields>) -> Answer {
    let state = state(&req)?;
    let token = form.staff.into_token();
    state
        .write(move |shop| shop.sessions().close(&token))
        .await?;
    let mut answer = see_other(&format!("{SIGN_IN}?ended"));
    answer.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&session_cookie(&req, None)).map_err(|_| ApiError::internal())?,
    );
    Ok(answer)
}

/// A form with no fields but its token.
#[derive(Debug, Deserialize)]
pub(super) struct NoFields {}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    #[test]
    fn other_origins_are_refused() {
        let same = TestRequest::post()
            .insert_header((header::HOST, "shop.example"))
            .insert_header((header::ORIGIN, "http://shop.example"))
            .insert_header(("sec-fetch-site", "same-origin"))
            .to_http_request();
        assert!(check_origin(&same).is_ok());
        let other = TestRequest::post()
            .insert_header((header::HOST, "shop.example"))
            .insert_header((header::ORIGIN, "http://evil.example"))
            .to_http_request();
        assert!(check_origin(&other).is_err());
        let cross = TestRequest::post()
            .insert_header((header::HOST, "shop.example"))
            .insert_header(("sec-fetch-site", "cross-site"))
            .to_http_request();
        assert!(check_origin(&cross).is_err());
    }
}

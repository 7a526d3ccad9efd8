//! What the console reads off a request before any page or form: the session's cookie, the
//! operator's console settings, and the shop's state.

use actix_web::{HttpRequest, web};
use petstore_core::{SessionLifetime, SessionToken};

use super::reply::{self, ConsoleError};
use crate::error::ApiError;
use crate::state::AppState;

/// The cookie holding the session's token.
const COOKIE: &str = "petstore_console";

/// The operator's choices for the console (`--console-idle-secs`, `--console-max-age-secs`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ConsoleSettings {
    /// How long a session lasts.
    pub lifetime: SessionLifetime,
}

pub(super) fn settings(req: &HttpRequest) -> ConsoleSettings {
    req.app_data::<web::Data<ConsoleSettings>>()
        .map(|settings| *settings.get_ref())
        .unwrap_or_default()
}

pub(super) fn state(req: &HttpRequest) -> Result<web::Data<AppState>, ConsoleError> {
    req.app_data::<web::Data<AppState>>()
        .cloned()
        .ok_or_else(|| ApiError::internal().into())
}

/// The session token the request's cookie holds, if it holds one of the right form.
pub(super) fn presented_token(req: &HttpRequest) -> Option<SessionToken> {
    SessionToken::parse(reply::cookie(req, COOKIE)?).ok()
}

/// The `Set-Cookie` value that gives the browser `token`, or (with `None`) takes it away.
/// `HttpOnly`: no script reads it; `SameSite=Strict`: no other site's page sends it;
/// `Secure` under HTTPS; no `Max-Age`, so it goes when the browser closes, and the server
/// ends it before then by time.
pub(super) fn session_cookie(req: &HttpRequest, token: Option<&SessionToken>) -> String {
    let secure = if req.connection_info().scheme() == "https" {
        "; Secure"
    } else {
        ""
    };
    match token {
        Some(token) => format!(
            "{COOKIE}={}; Path=/console/; HttpOnly; SameSite=Strict{secure}",
            token.reveal()
        ),
        None => format!("{COOKIE}=; Path=/console/; HttpOnly; SameSite=Strict; Max-Age=0{secure}"),
    }
}

#[cfg(test)]
mod tests {
    use actix_web::http::header;
    use actix_web::test::TestRequest;

    use super::*;

    #[test]
    fn the_cookie_is_read_only_in_its_form() {
        let token = SessionToken::from_random([3; 32]);
        let req = TestRequest::default()
            .insert_header((
                header::COOKIE,
                format!("other=1; {COOKIE}={}; last=2", token.reveal()),
            ))
            .to_http_request();
        assert_eq!(presented_token(&req), Some(token));
        let req = TestRequest::default()
            .insert_header((header::COOKIE, format!("{COOKIE}=pss_short")))
            .to_http_request();
        assert_eq!(presented_token(&req), None);
    }

    #[test]
    fn the_cookie_is_secure_under_https_and_taken_away_on_sign_out() {
        let token = SessionToken::from_random([3; 32]);
        let plain = TestRequest::default().to_http_request();
        let behind_tls = TestRequest::default()
            .insert_header(("x-forwarded-proto", "https"))
            .to_http_request();
        let given = session_cookie(&plain, Some(&token));
        assert_eq!(
            given,
            format!(
                "{COOKIE}={}; Path=/console/; HttpOnly; SameSite=Strict",
                token.reveal()
            )
        );
        assert!(session_cookie(&behind_tls, Some(&token)).ends_with("; Secure"));
        let taken = session_cookie(&plain, None);
        assert!(taken.starts_with(&format!("{COOKIE}=;")) && taken.contains("Max-Age=0"));
    }
}

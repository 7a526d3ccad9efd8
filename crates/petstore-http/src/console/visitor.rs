//! Who a console page is for: [`Visit`], a page's request whose session is looked up in the
//! same read as the page's data, and [`Staff`], the open session that read (or a form's
//! post) found.

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};
use petstore_core::{Caller, DomainError, Role, SessionLifetime, SessionToken};

use super::reply::{self, ConsoleError, is_htmx};
use super::request::{presented_token, settings, state};
use super::view;
use crate::context;
use crate::error::ApiError;
use crate::state::{AppState, PetService};

/// A request of an open session: who it acts as.
#[derive(Debug, Clone)]
pub(super) struct Staff {
    caller: Caller,
    token: SessionToken,
    /// Its forms' token, worked out once: a page of 100 rows has 100 forms.
    form_token: String,
    /// What the change before this request said it did.
    said: Option<String>,
}

impl Staff {
    /// Who the session acts as.
    pub(super) fn caller(&self) -> Caller {
        self.caller
    }

    /// The session's token, to end the session.
    pub(super) fn into_token(self) -> SessionToken {
        self.token
    }

    /// Whether a form carries this session's form token.
    pub(super) fn accepts_form_token(&self, form_token: &str) -> bool {
        self.token.accepts_form_token(form_token)
    }

    /// The session the request's cookie names, looked up in a trip of its own: for a form,
    /// whose change is a write.
    pub(super) async fn resume(req: &HttpRequest) -> Result<Self, ConsoleError> {
        let state = state(req)?;
        let (staff, ()) = Visit::of(req)?
            .resume_reading(&state, Freshness::Asked, |_, _| Ok(()))
            .await?;
        Ok(staff)
    }
}

impl view::Viewer for Staff {
    fn role(&self) -> Role {
        self.caller.role()
    }

    fn form_token(&self) -> &str {
        &self.form_token
    }

    fn said(&self) -> Option<&str> {
        self.said.as_deref()
    }
}

/// A page's request before its session is looked up: the page's own read looks it up in the
/// same trip to the store as the page's data ([`Visitor::read`]).
#[derive(Debug)]
pub(super) struct Visit {
    token: SessionToken,
    lifetime: SessionLifetime,
    said: Option<String>,
    htmx: bool,
}

/// Where a page's read goes.
#[derive(Debug, Clone, Copy)]
enum Freshness {
    /// As the request asks (a standby may serve it).
    Asked,
    /// The primary: pages that read the event feed.
    Primary,
}

impl Freshness {
    /// Runs `work` where this freshness sends a read.
    async fn read<T: Send + 'static>(
        self,
        state: &AppState,
        work: impl for<'s> FnMut(&PetService<'s>) -> Result<T, DomainError> + Send + 'static,
    ) -> Result<T, ApiError> {
        match self {
            Freshness::Asked => state.read(work).await,
            Freshness::Primary => state.read_primary(work).await,
        }
    }
}

impl Visit {
    fn of(req: &HttpRequest) -> Result<Self, ConsoleError> {
        let htmx = is_htmx(req);
        let token = presented_token(req).ok_or(ConsoleError::SignedOut { htmx })?;
        Ok(Self {
            token,
            lifetime: settings(req).lifetime,
            said: reply::said(req),
            htmx,
        })
    }

    /// Looks the session up and, if it is open, runs `work` as its caller, in one read.
    async fn resume_reading<T: Send + 'static>(
        self,
        state: &AppState,
        freshness: Freshness,
        mut work: impl for<'s> FnMut(&PetService<'s>, Caller) -> Result<T, DomainError> + Send + 'static,
    ) -> Result<(Staff, T), ConsoleError> {
        let Self {
            token,
            lifetime,
            said,
            htmx,
        } = self;
        let asked = token.clone();
        let job = move |shop: &PetService<'_>| {
            let Some(resumed) = shop.sessions().resume(&asked, &lifetime)? else {
                return Ok(None);
            };
            let data = work(shop, resumed.caller)?;
            Ok(Some((resumed, data)))
        };
        let read = freshness.read(state, job).await?;
        let Some((resumed, data)) = read else {
            return Err(ConsoleError::SignedOut { htmx });
        };
        if resumed.touch_due {
            let touched = token.clone();
            state
                .write(move |shop| shop.sessions().touch(&touched))
                .await?;
        }
        context::identified(std::sync::Arc::new(resumed.holder));
        let staff = Staff {
            caller: resumed.caller,
            form_token: token.form_token(),
            said,
            token,
        };
        Ok((staff, data))
    }
}

impl FromRequest for Visit {
    type Error = ConsoleError;
    type Future = std::future::Ready<Result<Self, ConsoleError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(Self::of(req))
    }
}

/// Who a page is drawn for: a request whose session its read looks up, or a session a
/// form's post already looked up (a refused form drawn again).
#[derive(Debug)]
pub(super) enum Visitor {
    /// A page's own request.
    Visiting(Visit),
    /// A form's session.
    Known(Staff),
}

impl From<Visit> for Visitor {
    fn from(visit: Visit) -> Self {
        Self::Visiting(visit)
    }
}

impl From<Staff> for Visitor {
    fn from(staff: Staff) -> Self {
        Self::Known(staff)
    }
}

impl Visitor {
    /// Runs `work` as the session's caller in one read, with the session's lookup where it
    /// is still to be made: a page's session and data cost one trip to the store.
    pub(super) async fn read<T: Send + 'static>(
        self,
        state: &AppState,
        work: impl for<'s> FnMut(&PetService<'s>, Caller) -> Result<T, DomainError> + Send + 'static,
    ) -> Result<(Staff, T), ConsoleError> {
        self.read_from(state, Freshness::Asked, work).await
    }

    /// [`Self::read`] on the primary, where the event feed is read.
    pub(super) async fn read_primary<T: Send + 'static>(
        self,
        state: &AppState,
        work: impl for<'s> FnMut(&PetService<'s>, Caller) -> Result<T, DomainError> + Send + 'static,
    ) -> Result<(Staff, T), ConsoleError> {
        self.read_from(state, Freshness::Primary, work).await
    }

    async fn read_from<T: Send + 'static>(
        self,
        state: &AppState,
        freshness: Freshness,
        mut work: impl for<'s> FnMut(&PetService<'s>, Caller) -> Result<T, DomainError> + Send + 'static,
    ) -> Result<(Staff, T), ConsoleError> {
        match self {
            Self::Visiting(visit) => visit.resume_reading(state, freshness, work).await,
            Self::Known(staff) => {
                let caller = staff.caller;
                let data = freshness
                    .read(state, move |shop| work(shop, caller))
                    .await?;
                Ok((staff, data))
            }
        }
    }
}

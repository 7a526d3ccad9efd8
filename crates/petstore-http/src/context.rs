//! The request context: made once per request by the door it came through (the API's
//! `authenticate`, the console's scope), kept for the request's task, and applied by
//! [`AppState`](crate::state::AppState)'s reads and writes, so that no handler passes any of
//! it along and none can forget a piece of it:
//! - how fresh its reads must be (`consistency.rs` reads it off the headers);
//! - who is asking (the key that authenticated, or the console session's), through which
//!   door, the trace the request belongs to and its id: every write's events and stock
//!   movements record them ([`Cause`]);
//! - the token its writes reached, for the answer.
//!
//! Work outside a request has no context: its writes record the actor of the state they run
//! on (`AppState::acting_as`), the operator unless it says otherwise (the command line, the
//! first admin key), the service itself for a chore (the webhook dispatcher).

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use actix_web::HttpMessage as _;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::HeaderValue;
use futures_util::FutureExt as _;
use petstore_core::{Cause, Door, KeyHolder, RequestId, TraceParent};
use petstore_store::{Freshness, Position};

use crate::consistency::CONSISTENCY_TOKEN;

/// Where a request came from, as `around_every_request` found it: the trace it belongs to and
/// its id.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    trace: Option<TraceParent>,
    request_id: Option<RequestId>,
}

impl Origin {
    /// What `around_every_request` left on `req`.
    pub fn of(req: &ServiceRequest) -> Self {
        let extensions = req.extensions();
        Self {
            trace: extensions.get::<TraceParent>().cloned(),
            request_id: extensions.get::<RequestId>().cloned(),
        }
    }
}

/// What one request carries to its reads and writes, and the token its writes reached.
struct RequestContext {
    wants: Freshness,
    door: Door,
    origin: Origin,
    /// The key's holder, once the door knows it.
    holder: RefCell<Option<Arc<KeyHolder>>>,
    /// The latest position its writes reached; `None` once a write's is unknown.
    token: Cell<Option<Position>>,
    /// Whether any write of it was answered yet.
    wrote: Cell<bool>,
}

impl RequestContext {
    /// The context of a request through `door` that asks `wants` of its reads and came from
    /// `origin`, before the door knows who asks.
    fn new(door: Door, wants: Freshness, origin: Origin) -> Self {
        Self {
            wants,
            door,
            origin,
            holder: RefCell::new(None),
            token: Cell::new(None),
            wrote: Cell::new(false),
        }
    }
}

tokio::task_local! {
    static REQUEST: RequestContext;
}

/// What the request being served asked of its reads; the default outside a request.
pub fn requested() -> Freshness {
    REQUEST
        .try_with(|request| request.wants)
        .unwrap_or_default()
}

/// Names who the request being served acts for: the holder of the key it authenticated
/// with, or of its console session's. Its writes record it, and the request's log line (the
/// span `around_every_request` opened, current while the request runs) names its key.
pub fn identified(holder: Arc<KeyHolder>) {
    if let Some(key) = holder.caller.key() {
        tracing::Span::current().record("key_id", key.get());
    }
    let _ = REQUEST.try_with(|request| request.holder.replace(Some(holder)));
}

/// What the writes of the request being served record with their events: who (a key's
/// holder, through the request's door) and under which trace. `None` outside a request.
pub fn cause() -> Option<Cause> {
    REQUEST
        .try_with(|request| {
            let door = request.door;
            // The soak's planted bug (bench/chaos --plant wrong-actor): the door swapped.
            #[cfg(feature = "plant-wrong-actor")]
            let door = match door {
                Door::Api => Door::Console,
                Door::Console => Door::Api,
            };
            Cause {
                actor: request
                    .holder
                    .borrow()
                    .as_ref()
                    .map(|holder| holder.actor(door)),
                trace: request.origin.trace.clone(),
                request_id: request.origin.request_id.clone(),
            }
        })
        .ok()
}

/// Notes that a write of the request being served was answered, with `token` the position
/// its commit reached, if known: the response carries the latest, and none once one write's
/// is unknown (a token short of a write would let a read miss it).
pub fn written(token: Option<Position>) {
    let _ = REQUEST.try_with(|request| {
        let kept = match (request.wrote.replace(true), request.token.get()) {
            (false, _) => token,
            (true, None) => None,
            (true, Some(kept)) => token.map(|token| token.max(kept)),
        };
        request.token.set(kept);
    });
}

/// Runs `serve`, the request's handling through `door`, with its context kept for its task:
/// `wants` of its reads (`consistency::asked` of its headers) and `origin`, which its changes
/// record. A successful answer gets the token its writes reached (a node without
/// read standbys gives none: its reads are never behind). Called by the one layer every
/// request of the door crosses (`authenticate`, the console's scope), rather than as a
/// layer of its own (each costs a boxed future per request).
///
/// Built of combinators rather than an async block, which would keep `serve` twice (as its
/// argument, and inside the scope's future): actix boxes this future for every request, and
/// one past glibc's small-allocation cache (1 KiB) costs more to allocate, move and free.
pub fn within<B>(
    door: Door,
    wants: Freshness,
    origin: Origin,
    serve: impl Future<Output = Result<ServiceResponse<B>, actix_web::Error>>,
) -> impl Future<Output = Result<ServiceResponse<B>, actix_web::Error>> {
    // The token is read as `serve` ends, while the context is still the task's.
    let served = serve.map(|response| (response, REQUEST.with(|request| request.token.get())));
    REQUEST
        .scope(RequestContext::new(door, wants, origin), served)
        .map(|(response, token)| {
            let mut response = response?;
            if let Some(token) = token.filter(|_| response.status().is_success())
                && let Ok(value) = HeaderValue::from_str(&token.to_string())
            {
                response.headers_mut().insert(CONSISTENCY_TOKEN, value);
            }
            Ok(response)
        })
}

#[cfg(test)]
mod tests {
    use petstore_core::{Actor, Caller, KeyId, Name, Role};

    use super::*;

    fn context() -> RequestContext {
        RequestContext::new(Door::Console, Freshness::Latest, Origin::default())
    }

    #[actix_web::test]
    async fn a_request_keeps_the_latest_token_its_writes_reached() {
        let at = |lsn| Position { timeline: 1, lsn };
        let kept = REQUEST
            .scope(context(), async move {
                written(Some(at(9)));
                written(Some(at(5)));
                REQUEST.with(|request| request.token.get())
            })
            .await;
        assert_eq!(kept, Some(at(9)));
        let kept = REQUEST
            .scope(context(), async move {
                written(Some(at(9)));
                written(None);
                written(Some(at(12)));
                REQUEST.with(|request| request.token.get())
            })
            .await;
        assert_eq!(kept, None, "one write's position unknown: no token");
        // Outside a request: nothing to keep, and the default asked.
        written(Some(Position {
            timeline: 1,
            lsn: 1,
        }));
        assert_eq!(requested(), Freshness::Latest);
    }

    #[actix_web::test]
    async fn the_cause_names_the_holder_through_the_request_s_door() {
        let holder = KeyHolder {
            caller: Caller::key_holder(KeyId::new(4).unwrap(), Role::Staff),
            name: Name::parse("desk").unwrap(),
        };
        let (before, after) = REQUEST
            .scope(context(), async move {
                let before = cause();
                identified(Arc::new(holder));
                (before, cause())
            })
            .await;
        assert_eq!(before, Some(Cause::default()), "no holder yet");
        assert_eq!(
            after.and_then(|cause| cause.actor),
            Some(Actor::Key {
                id: KeyId::new(4).unwrap(),
                name: Name::parse("desk").unwrap(),
                role: Role::Staff,
                door: Door::Console,
            })
        );
        assert_eq!(cause(), None, "outside a request");
    }
}

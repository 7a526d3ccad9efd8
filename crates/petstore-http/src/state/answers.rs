//! How work run on the store's threads is answered: by its deadline, inside its request's
//! span, ending that span, and as a 500 when the thread gave nothing back.

use std::time::Duration;

use actix_web::ResponseError as _;
use futures_util::FutureExt as _;
use petstore_core::{DomainError, Failure};
use petstore_store::JobStore;

use crate::error::ApiError;
use crate::traces::ChildSpan;

/// The outcome of work on a database server, answered by `deadline` whatever the network
/// does: a server gone silent (a dead host behind a lost route, a proxy that holds connections and
/// forwards nothing) leaves a call waiting for minutes, which no client should. The call goes
/// on in the background, bounded by TCP, and its connection comes back to the pool when it
/// ends. A read answered this way is `Unavailable`; a write may yet commit when the network
/// returns, so it is `OutcomeUnknown`.
pub(super) fn by_deadline<T>(
    deadline: Duration,
    writes: bool,
    outcome: impl Future<Output = Result<Result<T, DomainError>, impl std::fmt::Display>>,
) -> impl Future<Output = Result<T, ApiError>> {
    actix_web::rt::time::timeout(deadline, outcome).map(move |outcome| match outcome {
        Ok(outcome) => answer(outcome),
        Err(_) => {
            let late = Failure::new(format!(
                "the database did not answer within {deadline:?}; the call goes on in the \
                 background"
            ));
            Err(ApiError::from(if writes {
                DomainError::OutcomeUnknown(late)
            } else {
                DomainError::Unavailable(late)
            }))
        }
    })
}

/// The answer of a store call, ending its span (if it has one) with it. A `map`, not an
/// `async fn`: one would hold the answer's future twice (as its argument and as what it
/// awaits), and a handler's future, boxed by actix, with it.
pub(super) fn ending<T>(
    span: Option<ChildSpan>,
    answer: impl Future<Output = Result<T, ApiError>>,
) -> impl Future<Output = Result<T, ApiError>> {
    answer.map(move |result| {
        if let Some(span) = span {
            span.finish(
                result
                    .as_ref()
                    .is_err_and(|error| error.status_code().is_server_error()),
            );
        }
        result
    })
}

/// `work` run inside the tracing span of the request that queued it.
pub(super) fn in_span<T>(
    mut work: impl for<'s> FnMut(JobStore<'s>) -> T + Send + 'static,
) -> impl for<'s> FnMut(JobStore<'s>) -> T + Send + 'static {
    let span = tracing::Span::current();
    move |store: JobStore<'_>| {
        let _entered = span.enter();
        work(store)
    }
}

/// What a use case run on another thread answers: its result, or a 500 (logged) when the
/// thread gave none back (the use case panicked, or was cancelled).
pub(super) fn answer<T>(
    outcome: Result<Result<T, DomainError>, impl std::fmt::Display>,
) -> Result<T, ApiError> {
    match outcome {
        Ok(result) => result.map_err(ApiError::from),
        Err(error) => {
            tracing::error!(%error, "a use case panicked or was cancelled");
            Err(ApiError::internal())
        }
    }
}

//! Logging to standard error, and what a client may not put in it.
//!
//! actix-http logs each connection it closes on a malformed request at ERROR ("stream error:
//! request parse error: …"). Anyone can send those, so at ERROR they would flood the log and
//! page an operator for what is no fault of the service. [`ClientMistakes`] takes them out:
//! each is counted in `/metrics` (`petstore_http_connection_errors_total{reason}`) and logged
//! again at DEBUG under the target `petstore_http::connections`, which
//! `RUST_LOG=info,petstore_http::connections=debug` shows. Failures of the service's own
//! making on a connection (a response body that failed, an internal error) stay at ERROR.

use tracing::field::{Field, Visit};
use tracing::{Event, Metadata, Subscriber};
use tracing_subscriber::filter::{EnvFilter, FilterExt, filter_fn};
use tracing_subscriber::layer::{Context, Filter, Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

use crate::cli::LogFormat;
use crate::metrics::count_connection_error;

/// Where actix-http logs a connection it closes with an error.
const DISPATCHER: &str = "actix_http::h1::dispatcher";

/// The target our own line about such a connection is logged under.
pub const CONNECTIONS: &str = "petstore_http::connections";

/// Sets up logging to standard error.
///
/// The filter is `RUST_LOG`, as in every Rust service (`PETSTORE_LOG`, the older name, is read
/// when `RUST_LOG` is not set), else `info`. Colour only on a terminal, and never with
/// `NO_COLOR` set to anything (no-color.org): a file or a log shipper gets plain text.
pub fn init_logging(format: LogFormat) {
    use std::io::IsTerminal;
    let filter = ["RUST_LOG", "PETSTORE_LOG"]
        .into_iter()
        .find_map(|var| EnvFilter::try_from_env(var).ok())
        .unwrap_or_else(|| EnvFilter::new("info"));
    let colour = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
    let lines = tracing_subscriber::fmt::layer()
        .with_ansi(colour)
        .with_writer(std::io::stderr);
    // Both layers filter for themselves: the operator's filter decides what is written, and
    // never keeps a client's mistake from being counted.
    let shown = filter.and(NotAClientMistake);
    // The counting layer goes last: the line it logs is dispatched from its `on_event`, which
    // must come after the writing layer has dealt with the line it replaces.
    let registry = tracing_subscriber::registry();
    match format {
        LogFormat::Text => registry
            .with(lines.with_filter(shown))
            .with(ClientMistakes.with_filter(filter_fn(is_dispatcher_error)))
            .init(),
        LogFormat::Json => registry
            .with(lines.json().with_filter(shown))
            .with(ClientMistakes.with_filter(filter_fn(is_dispatcher_error)))
            .init(),
    }
}

fn is_dispatcher_error(meta: &Metadata<'_>) -> bool {
    *meta.level() == tracing::Level::ERROR && meta.target() == DISPATCHER
}

/// Why a client's connection was closed, from actix-http's line about it, or `None` when the
/// line is about a failure of the service's own.
fn client_mistake(message: &str) -> Option<&'static str> {
    let error = message.strip_prefix("stream error: ")?;
    if error.starts_with("request parse error") {
        Some("malformed")
    } else if error.starts_with("request did not complete within")
        || error.starts_with("connection shutdown timeout")
    {
        Some("timeout")
    } else if error.starts_with("I/O error") {
        Some("io")
    } else {
        None
    }
}

/// The message of an event, as its macro formatted it.
#[derive(Default)]
struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            value.clone_into(&mut self.0);
        }
    }
}

fn message(event: &Event<'_>) -> Message {
    let mut message = Message::default();
    event.record(&mut message);
    message
}

/// Counts each connection closed on a client's mistake, and logs it again at DEBUG.
struct ClientMistakes;

impl<S: Subscriber> Layer<S> for ClientMistakes {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let Message(text) = message(event);
        let Some(reason) = client_mistake(&text) else {
            return;
        };
        count_connection_error(reason);
        // Dispatched to the global subscriber from inside it: tracing lets a subscriber set
        // globally log from its own layers (a scoped one would drop the line, not the count).
        let detail = text.trim_start_matches("stream error: ");
        tracing::debug!(target: CONNECTIONS, reason, detail, "connection closed on a client's mistake");
    }
}

/// Keeps actix-http's ERROR line about a client's mistake out of the log ([`ClientMistakes`]
/// says it at DEBUG instead).
struct NotAClientMistake;

impl<S> Filter<S> for NotAClientMistake {
    fn enabled(&self, _: &Metadata<'_>, _: &Context<'_, S>) -> bool {
        true
    }

    fn event_enabled(&self, event: &Event<'_>, _: &Context<'_, S>) -> bool {
        !is_dispatcher_error(event.metadata()) || client_mistake(&message(event).0).is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::client_mistake;

    #[test]
    fn a_clients_mistakes_are_told_from_the_services_failures() {
        let cases = [
            (
                "stream error: request parse error: invalid Header provided",
                Some("malformed"),
            ),
            (
                "stream error: request parse error: Invalid HTTP method specified",
                Some("malformed"),
            ),
            (
                "stream error: request did not complete within the specified timeout",
                Some("timeout"),
            ),
            ("stream error: connection shutdown timeout", Some("timeout")),
            (
                "stream error: I/O error: Connection reset by peer (os error 104)",
                Some("io"),
            ),
            ("stream error: service error", None),
            ("stream error: body error: the database went away", None),
            (
                "stream error: handler dropped payload before reading EOF",
                None,
            ),
            ("stream error: internal error", None),
            ("Response payload stream error: Custom", None),
            ("write zero; closing", None),
        ];
        for (message, reason) in cases {
            assert_eq!(client_mistake(message), reason, "{message}");
        }
    }
}

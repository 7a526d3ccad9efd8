//! Sends one delivery: a signed POST to the subscription's URL, refusing private addresses.

use std::error::Error as StdError;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_tls::connect::{Resolve, Resolver};
use futures_util::future::LocalBoxFuture;
use petstore_core::is_public_address;
use petstore_core::{AttemptReport, PendingDelivery, TraceParent};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::wire::CloudEvent;

/// The longest error text kept in a delivery attempt's record.
const MAX_ERROR_CHARS: usize = 300;

/// The HTTP client deliveries go through. Not `Send`: it lives on the dispatcher's thread.
pub(crate) struct WebhookClient {
    client: awc::Client,
    allow_private: bool,
}

impl WebhookClient {
    /// A client that times a delivery out after `timeout` and, unless `allow_private`, only
    /// connects to public addresses.
    pub(crate) fn new(
        tls: Arc<rustls::ClientConfig>,
        timeout: Duration,
        allow_private: bool,
    ) -> Self {
        let resolver = Resolver::custom(GuardedResolver { allow_private });
        let connector = awc::Connector::new()
            .connector(actix_tls::connect::Connector::new(resolver).service())
            .rustls_0_23(tls)
            .timeout(timeout.min(Duration::from_secs(5)));
        let client = awc::Client::builder()
            .connector(connector)
            // A redirect is a failed delivery: following it would send the signed event, and
            // the request, to a place nobody subscribed.
            .disable_redirects()
            .timeout(timeout)
            .add_default_header((
                "user-agent",
                concat!("petstore-webhooks/", env!("CARGO_PKG_VERSION")),
            ))
            .finish();
        Self {
            client,
            allow_private,
        }
    }

    /// POSTs the event, signed the Standard Webhooks way, with `trace` as its `traceparent`,
    /// and reports what happened and how long it took. `timestamp` is the attempt's time in
    /// Unix seconds.
    pub(crate) async fn deliver(
        &self,
        pending: &PendingDelivery,
        trace: Option<&TraceParent>,
        timestamp: i64,
    ) -> (AttemptReport, Duration) {
        let started = Instant::now();
        let report = self.attempt(pending, trace, timestamp).await;
        (report, started.elapsed())
    }

    async fn attempt(
        &self,
        pending: &PendingDelivery,
        trace: Option<&TraceParent>,
        timestamp: i64,
    ) -> AttemptReport {
        if let Some(address) = pending.url.literal_address()
            && !self.allow_private
            && !is_public_address(address)
        {
            return failure("the address is private or reserved");
        }
        let body = match serde_json::to_vec(&CloudEvent::from(pending.event.clone())) {
            Ok(body) => body,
            Err(error) => return failure(&error.to_string()),
        };
        // The event id identifies the message: the same on every retry, so that a receiver
        // can drop a repeat.
        let message_id = pending.event.id.to_string();
        let signature = pending.secret.sign(&message_id, timestamp, &body);
        let mut request = self
            .client
            .post(pending.url.as_str())
            .insert_header(("content-type", "application/json"))
            .insert_header(("webhook-id", message_id))
            .insert_header(("webhook-timestamp", timestamp.to_string()))
            .insert_header(("webhook-signature", signature));
        // The request that caused the event was traced: the receiver's work joins that trace.
        if let Some(trace) = trace {
            request = request.insert_header(("traceparent", trace.as_str()));
        }
        let sent = request.send_body(body).await;
        match sent {
            Ok(response) => AttemptReport {
                status_code: Some(response.status().as_u16()),
                error: None,
            },
            Err(error) => failure(&describe(&error)),
        }
    }
}

fn failure(reason: &str) -> AttemptReport {
    AttemptReport {
        status_code: None,
        error: Some(reason.chars().take(MAX_ERROR_CHARS).collect()),
    }
}

/// The error and its causes, which say what actually went wrong ("connection refused").
fn describe(error: &dyn StdError) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// TLS on ring, trusting the system's roots and the CA certificates of `extra_roots` (a PEM
/// file), for receivers whose certificates come from the operator's own CA.
pub fn tls_config(extra_roots: Option<&Path>) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    let (mut trusted, _ignored) = roots.add_parsable_certificates(found.certs);
    if let Some(path) = extra_roots {
        let pem = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        for certificate in CertificateDer::pem_slice_iter(&pem) {
            let certificate = certificate.map_err(|e| format!("{}: {e}", path.display()))?;
            roots
                .add(certificate)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            trusted += 1;
        }
    }
    if trusted == 0 {
        tracing::warn!(
            errors = ?found.errors,
            "no trusted root certificates found: https webhook deliveries will fail"
        );
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// Resolves a host name and keeps only the addresses a delivery may go to. The check is made
/// on the addresses actually connected to, so a name that resolves to a private address (or
/// starts doing so after the subscription was made) cannot reach the internal network.
struct GuardedResolver {
    allow_private: bool,
}

impl Resolve for GuardedResolver {
    fn lookup<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> LocalBoxFuture<'a, Result<Vec<SocketAddr>, Box<dyn StdError>>> {
        let host = host.to_owned();
        Box::pin(async move {
            let addresses =
                actix_web::rt::task::spawn_blocking(move || -> std::io::Result<Vec<SocketAddr>> {
                    Ok((host.as_str(), port).to_socket_addrs()?.collect())
                })
                .await??;
            let allowed: Vec<SocketAddr> = addresses
                .into_iter()
                .filter(|a| self.allow_private || is_public_address(a.ip()))
                .collect();
            if allowed.is_empty() {
                return Err("the host resolves to no public address".into());
            }
            Ok(allowed)
        })
    }
}

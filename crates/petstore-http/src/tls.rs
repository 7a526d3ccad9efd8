//! HTTPS from the binary itself (`--tls-cert`, `--tls-key`): the certificate chain and its key,
//! read at start and read again on SIGHUP, so that a certificate an ACME client renewed is
//! served without a restart. A new connection gets the certificate read last; an open one
//! keeps the one it shook hands with, so nothing in flight is dropped. HTTP/2 is offered by
//! ALPN beside HTTP/1.1 (actix adds both protocols to the configuration it is given).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// Why the certificate or its key cannot be served; each names the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The certificate file.
    #[error("--tls-cert {}: {reason}", path.display())]
    Certificate {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The key file.
    #[error("--tls-key {}: {reason}", path.display())]
    Key {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Two good files that do not belong together.
    #[error(
        "--tls-key {} is not the key of the certificate in --tls-cert {}: give the key the \
         certificate was issued for, or the certificate of this key",
        key.display(),
        certificate.display()
    )]
    Mismatch {
        /// The certificate file.
        certificate: PathBuf,
        /// The key file.
        key: PathBuf,
    },
}

/// The certificate the server presents, and the files it is read from.
#[derive(Debug)]
pub struct ServerCertificate {
    certificate_file: PathBuf,
    key_file: PathBuf,
    provider: Arc<CryptoProvider>,
    current: Mutex<Arc<CertifiedKey>>,
}

impl ServerCertificate {
    /// Reads the certificate chain (PEM, the server's own certificate first) and its private
    /// key (PEM: PKCS#8, PKCS#1 or SEC1), and checks that they belong together.
    pub fn load(certificate_file: &Path, key_file: &Path) -> Result<Arc<Self>, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let current = read(certificate_file, key_file, &provider)?;
        Ok(Arc::new(Self {
            certificate_file: certificate_file.to_owned(),
            key_file: key_file.to_owned(),
            provider,
            current: Mutex::new(Arc::new(current)),
        }))
    }

    /// Reads both files again; on any error the certificate in use stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        let renewed = read(&self.certificate_file, &self.key_file, &self.provider)?;
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(renewed);
        Ok(())
    }

    /// The server's TLS configuration, presenting whatever certificate was read last.
    pub fn server_config(self: &Arc<Self>) -> Result<rustls::ServerConfig, TlsError> {
        let config = rustls::ServerConfig::builder_with_provider(self.provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|error| TlsError::Certificate {
                path: self.certificate_file.clone(),
                reason: error.to_string(),
            })?
            .with_no_client_auth()
            .with_cert_resolver(self.clone());
        Ok(config)
    }
}

impl ResolvesServerCert for ServerCertificate {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.current
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        )
    }
}

fn read(
    certificate_file: &Path,
    key_file: &Path,
    provider: &CryptoProvider,
) -> Result<CertifiedKey, TlsError> {
    let certificate_error = |reason: String| TlsError::Certificate {
        path: certificate_file.to_owned(),
        reason,
    };
    let key_error = |reason: String| TlsError::Key {
        path: key_file.to_owned(),
        reason,
    };
    let pem =
        std::fs::read(certificate_file).map_err(|error| certificate_error(error.to_string()))?;
    let chain = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| certificate_error(format!("not a PEM certificate chain: {error}")))?;
    if chain.is_empty() {
        return Err(certificate_error("holds no PEM certificate".to_owned()));
    }
    let pem = std::fs::read(key_file).map_err(|error| key_error(error.to_string()))?;
    let key = PrivateKeyDer::from_pem_slice(&pem)
        .map_err(|error| key_error(format!("not a PEM private key: {error}")))?;
    CertifiedKey::from_der(chain, key, provider).map_err(|error| match error {
        rustls::Error::InconsistentKeys(_) => TlsError::Mismatch {
            certificate: certificate_file.to_owned(),
            key: key_file.to_owned(),
        },
        other => key_error(other.to_string()),
    })
}

/// Reads the certificate again on every SIGHUP of `hangups`, for as long as the server runs;
/// without HTTPS, a SIGHUP is logged and changes nothing (rather than ending the process, as
/// it would by default). `hangups` listens from `serve`'s first instant (`cli/signals.rs`).
pub async fn reload_on_hangup(
    certificate: Option<Arc<ServerCertificate>>,
    hangups: Option<actix_web::rt::signal::unix::Signal>,
) {
    let Some(mut hangups) = hangups else {
        return;
    };
    while hangups.recv().await.is_some() {
        let Some(certificate) = &certificate else {
            tracing::info!("SIGHUP: nothing to read again (no --tls-cert)");
            continue;
        };
        match certificate.reload() {
            Ok(()) => tracing::info!("SIGHUP: the TLS certificate and key were read again"),
            Err(error) => {
                tracing::error!(%error, "SIGHUP: the TLS certificate in use stays");
            }
        }
    }
}

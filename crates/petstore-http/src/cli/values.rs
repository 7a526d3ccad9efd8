//! The checks of setting values that need more than their type, run by clap as it parses a
//! flag, an environment variable or a config file's line: a bad value is then refused with
//! its source named and exit 2, before the database is opened or anything is written. A
//! check that waited for the setting's use ran after the database was created, and after
//! the first admin key's file was written.

use std::net::ToSocketAddrs;
use std::path::{Path, PathBuf};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// `--bind`: an address the service can listen on (`127.0.0.1:8080`, `[::]:8080`,
/// `localhost:8080`), resolved now.
pub(super) fn listen_address(text: &str) -> Result<String, String> {
    let resolved = text
        .to_socket_addrs()
        .map_err(|error| format!("{text:?} is not host:port ({error})"))?;
    if resolved.count() == 0 {
        return Err(format!("{text:?} names no address"));
    }
    Ok(text.to_owned())
}

/// `--currency`: an ISO 4217 code a shop may price in.
pub(super) fn currency(text: &str) -> Result<petstore_core::Currency, String> {
    petstore_core::Currency::parse(text).map_err(|e| format!("{text:?} {}", e.reason))
}

/// `--cors-origin`: an origin as a browser sends it.
pub(super) fn origin(text: &str) -> Result<String, String> {
    crate::cors::parse_origin(text)
}

/// `--database-replica`: a PostgreSQL URL.
pub(super) fn postgres_url(text: &str) -> Result<String, String> {
    match petstore_store::Database::parse(text) {
        petstore_store::Database::Postgres(url) => Ok(url),
        petstore_store::Database::Sqlite(_) => Err(format!(
            "{:?} is not a postgres:// or postgresql:// URL",
            petstore_store::redact_password(text)
        )),
    }
}

/// `--otlp-endpoint`: an `http://` or `https://` address with a host.
pub(super) fn http_endpoint(text: &str) -> Result<String, String> {
    let refuse = || format!("{text:?} is not an http:// or https:// address");
    let uri: actix_web::http::Uri = text.parse().map_err(|_| refuse())?;
    let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
    if !scheme_ok || uri.host().is_none_or(str::is_empty) {
        return Err(refuse());
    }
    Ok(text.to_owned())
}

/// A PEM file of one or more certificates (`--tls-cert`, `--webhook-ca-file`), read now.
pub(super) fn certificates_file(text: &str) -> Result<PathBuf, String> {
    let pem = read(text)?;
    let certificates = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| format!("{text}: not PEM certificates ({error})"))?;
    if certificates.is_empty() {
        return Err(format!("{text}: holds no PEM certificate"));
    }
    Ok(PathBuf::from(text))
}

/// `--tls-key`: a PEM private key, read now.
pub(super) fn private_key_file(text: &str) -> Result<PathBuf, String> {
    let pem = read(text)?;
    PrivateKeyDer::from_pem_slice(&pem)
        .map_err(|error| format!("{text}: not a PEM private key ({error})"))?;
    Ok(PathBuf::from(text))
}

/// A file the service writes (`--admin-key-file`): its folder must exist.
pub(super) fn file_in_a_folder(text: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(text);
    if text.is_empty() || path.is_dir() {
        return Err(format!("{text:?} is not a file name"));
    }
    folder_exists(&path)?;
    Ok(path)
}

/// The folder `path` goes in exists (the working directory for a bare name).
pub(super) fn folder_exists(path: &Path) -> Result<(), String> {
    let folder = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if folder.is_dir() {
        Ok(())
    } else {
        Err(format!("the folder {} does not exist", folder.display()))
    }
}

fn read(text: &str) -> Result<Vec<u8>, String> {
    std::fs::read(text).map_err(|error| format!("cannot read {text}: {error}"))
}

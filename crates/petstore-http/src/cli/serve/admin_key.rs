//! The first admin key of a database with none: `PETSTORE_BOOTSTRAP_ADMIN_KEY` made one, or a
//! new key written to its file, never to the log. Kept apart from the server's life
//! (`serve.rs`), which asks for it once, after it can listen and before it serves.

use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};
use petstore_core::{Bootstrap, Bootstrapped, Caller, KeyQuery, KeySecret, PageSize};
use petstore_store::Database;

use crate::auth::generate_secret;
use crate::state::AppState;

/// A usable service from the first start: `PETSTORE_BOOTSTRAP_ADMIN_KEY` becomes an admin key
/// while no admin key is active; without it, a database with no key at all gets a new admin
/// key, written to `key_file` (readable by its owner only), never to the log.
pub(super) async fn bootstrap_admin_key(state: &AppState, key_file: &Path) -> anyhow::Result<()> {
    if let Ok(text) = std::env::var("PETSTORE_BOOTSTRAP_ADMIN_KEY") {
        let secret = KeySecret::parse(&text)
            .map_err(|e| anyhow!("PETSTORE_BOOTSTRAP_ADMIN_KEY {}", e.reason))?;
        let when = Bootstrap::WhileNoAdminIsActive;
        match state
            .write(move |shop| shop.keys().bootstrap(&secret, when))
            .await?
        {
            Bootstrapped::Made(key) => {
                tracing::info!(key_id = %key.id, "PETSTORE_BOOTSTRAP_ADMIN_KEY is now an admin key");
            }
            Bootstrapped::NotNeeded => tracing::info!(
                "PETSTORE_BOOTSTRAP_ADMIN_KEY is not used: an admin key is active, and the \
                 variable makes one only while none is"
            ),
            // A stale variable (its key was revoked, say, in a rotation) must not stop the
            // service, nor bring the key back.
            Bootstrapped::AlreadyAKey(key) => tracing::warn!(
                key_id = %key.id,
                revoked = key.revoked_at.is_some(),
                "PETSTORE_BOOTSTRAP_ADMIN_KEY is not used: its secret is already key {}{}, and \
                 no admin key is active; the variable can be removed (or given a new secret), \
                 and `petstore keys create --role admin` makes an admin key",
                key.id,
                if key.revoked_at.is_some() { ", revoked" } else { "" }
            ),
        }
        return Ok(());
    }
    // Any key at all, and there is nothing to do: a restart writes no file (its folder may
    // not even be writable), and holds no secret.
    let query = KeyQuery {
        after: None,
        limit: PageSize::new(1)?,
    };
    if !state
        .read(move |shop| shop.keys().list(Caller::Operator, &query))
        .await?
        .items
        .is_empty()
    {
        // Keys made before the first start (`petstore keys create --role staff`) are no
        // admin: said, since no admin key will be made for this database by itself.
        if !state.read(|shop| shop.keys().has_active_admin()).await? {
            tracing::warn!(
                "no admin key is active, so nobody can create or revoke keys through the API: \
                 `petstore keys create --role admin` makes one"
            );
        }
        return Ok(());
    }
    // Written where it goes before the key exists: a start that cannot deliver the key
    // creates none, and one that creates none (another node was first) leaves no file.
    let secret = generate_secret()?;
    let pending = PendingKeyFile::write(key_file, secret.reveal())?;
    let created = state
        .write(move |shop| shop.keys().bootstrap(&secret, Bootstrap::OnFirstStart))
        .await?;
    if let Bootstrapped::Made(key) = created {
        pending.keep()?;
        tracing::warn!(
            key_id = %key.id,
            file = %key_file.display(),
            "no API key existed, so an admin key was created; it is in this file, readable by \
             this user only: store it somewhere safe and delete the file"
        );
    }
    Ok(())
}

/// Where a first start's admin key goes when none was given: beside a SQLite database, or in
/// the working directory for PostgreSQL.
pub(super) fn default_key_file(database: &Database) -> PathBuf {
    match database {
        Database::Sqlite(path) => {
            let mut name = path.clone().into_os_string();
            name.push(".admin-key");
            PathBuf::from(name)
        }
        Database::Postgres(_) => PathBuf::from("petstore-admin-key"),
    }
}

/// A new admin key written beside its final name, readable by its owner only; moved there
/// by [`keep`](Self::keep), removed if dropped first.
struct PendingKeyFile {
    /// `None` once moved.
    written: Option<PathBuf>,
    kept: PathBuf,
}

impl PendingKeyFile {
    fn write(file: &Path, secret: &str) -> anyhow::Result<Self> {
        use std::io::Write as _;
        use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
        let mut name = file.as_os_str().to_owned();
        name.push(".new");
        let written = PathBuf::from(name);
        // Made first, so that a write that fails half way leaves no file behind.
        let pending = Self {
            written: Some(written.clone()),
            kept: file.to_owned(),
        };
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&written)
            .and_then(|mut out| {
                // A file left by an earlier start keeps its mode on open: make it private.
                std::fs::set_permissions(&written, std::fs::Permissions::from_mode(0o600))?;
                writeln!(out, "{secret}")?;
                out.sync_all()
            })
            .with_context(|| {
                format!(
                    "cannot write the first admin key to {} (--admin-key-file)",
                    written.display()
                )
            })?;
        Ok(pending)
    }

    fn keep(mut self) -> anyhow::Result<()> {
        let Some(written) = self.written.take() else {
            return Ok(());
        };
        std::fs::rename(&written, &self.kept).with_context(|| {
            format!(
                "the first admin key is in {}, and cannot be moved to {}",
                written.display(),
                self.kept.display()
            )
        })
    }
}

impl Drop for PendingKeyFile {
    fn drop(&mut self) {
        if let Some(written) = &self.written {
            let _ = std::fs::remove_file(written);
        }
    }
}
